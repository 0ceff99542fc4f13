import CMicroHTTPD
import Foundation
import HTTPRouting
import Lifecycle
import ServiceLogging

/// The libmicrohttpd access-handler protocol, on the daemon's single polling thread.
///
/// For each request MHD calls the handler (1) once the headers are parsed, with `*con_cls == NULL`;
/// (2) once per chunk of body, with `*upload_data_size > 0`; (3) when the request is complete, with
/// `*upload_data_size == 0` — and again after `MHD_resume_connection`. A response can only be queued
/// in calls (1) and (3); queuing in (1) makes MHD skip the body and close the connection.
extension ServerCore {
    /// `url` is the path as libmicrohttpd decoded it (percent escapes resolved), `method` the
    /// request method; both are read only on the first call of a request.
    func access(connection: OpaquePointer, url: UnsafePointer<CChar>, method: UnsafePointer<CChar>,
                uploadData: UnsafePointer<CChar>?, uploadDataSize: UnsafeMutablePointer<Int>,
                contextSlot: UnsafeMutablePointer<UnsafeMutableRawPointer?>) -> MHD_Result {
        guard let raw = contextSlot.pointee, raw != Self.nulPathMarker else {
            let marked = contextSlot.pointee != nil
            // A path whose decoded bytes are not UTF-8 is refused (`HTTPError.pathNotUTF8`).
            let path = String(validatingCString: url)
            let context = RequestContext(connection: connection, methodName: String(cString: method),
                                         path: path ?? String(cString: url))
            contextSlot.pointee = Unmanaged.passRetained(context).toOpaque()
            return headersReceived(context, refusing: marked ? Self.nulInPath : path == nil ? HTTPError.pathNotUTF8 : nil)
        }
        let context = Unmanaged<RequestContext>.fromOpaque(raw).takeUnretainedValue()
        if uploadDataSize.pointee > 0 {
            let count = uploadDataSize.pointee
            uploadDataSize.pointee = 0
            return bodyReceived(context, bytes: UnsafeRawBufferPointer(start: uploadData, count: count))
        }
        return requestComplete(context)
    }

    /// What the URI log callback leaves in the context slot of a request whose path holds `%00`
    /// (`ZX_MHD_NUL_PATH_MARKER`): MHD would hand the handler the path cut at the NUL.
    static var nulPathMarker: UnsafeMutableRawPointer { UnsafeMutableRawPointer(bitPattern: 1)! }

    static let nulInPath = HTTPError(.badRequest, code: "INVALID_FIELD",
                                     message: "path: %00 (NUL) is in no resource's name")

    /// Call (1): the request line and headers are known; `refusal`, when the request line
    /// alone decided the answer.
    private func headersReceived(_ context: RequestContext, refusing refusal: HTTPError? = nil) -> MHD_Result {
        let mode = requestStarted()
        context.request.headers = Self.values(of: context.connection, kind: .HEADER_KIND)
        context.request.query = Self.values(of: context.connection, kind: .GET_ARGUMENT_KIND).dictionary
        context.request.remoteAddress = zx_mhd_client_address(context.connection).flatMap(SocketAddress.describe)
        if mode != .serving {
            return respondEarly(context, with: Self.shuttingDown)
        }
        guard context.method != nil else {
            return respondEarly(context, with: HTTPError(.init(501), code: "NOT_IMPLEMENTED",
                                                         message: "method \(context.methodName) is not supported"))
        }
        if let refusal { return respondEarly(context, with: refusal) }
        if let resolve {
            resolve(&context.request)
            if context.request.route?.streamsBody == true { return startStreaming(context) }
        }
        if let declared = context.request.headers["Content-Length"].flatMap({ Int($0) }) {
            if declared > configuration.maxBodyBytes {
                context.isTooLarge = true
                return respondEarly(context, with: tooLarge)
            }
            // Bounded so that clients announcing bodies they never send cannot pin memory.
            context.request.body.reserveCapacity(min(declared, 1 << 20))
        }
        return .YES
    }

    /// A streaming route: the handler runs now and reads the body while it arrives
    /// (`HTTPBodyStream`); the connection is suspended only while the reader is behind.
    private func startStreaming(_ context: RequestContext) -> MHD_Result {
        guard registerSuspended(context) else { return respondEarly(context, with: Self.shuttingDown) }
        let connection = SuspendableConnection(pointer: context.connection)
        let declared = context.request.headers["Content-Length"].flatMap { Int64($0) }
        let stream = HTTPBodyStream(declaredLength: declared,
                                    suspend: { MHD_suspend_connection(connection.pointer) },
                                    resume: { MHD_resume_connection(connection.pointer) })
        context.stream = stream
        context.request.bodyStream = stream
        context.beginHandling()
        let request = context.request
        handlers.spawn { await self.handle(request, context: context) }
        return .YES
    }

    /// Call (2): a piece of the body. Past the limit the body is dropped and the rest discarded;
    /// a client that keeps sending far beyond it is disconnected.
    private func bodyReceived(_ context: RequestContext, bytes: UnsafeRawBufferPointer) -> MHD_Result {
        if let stream = context.stream {
            context.emptyBodyCalls = 0
            stream.append(bytes)
            return .YES
        }
        if context.isTooLarge {
            context.overflowBytes += bytes.count
            return context.overflowBytes > max(configuration.maxBodyBytes, 1 << 20) ? MHD_Result.NO : MHD_Result.YES
        }
        context.receivedBytes += bytes.count
        if context.receivedBytes > configuration.maxBodyBytes {
            context.isTooLarge = true
            context.request.body = []
            return .YES
        }
        context.request.body.append(contentsOf: bytes)
        return .YES
    }

    /// Call (3): the request is complete — dispatch it, or queue the response a handler left.
    private func requestComplete(_ context: RequestContext) -> MHD_Result {
        if let stream = context.stream {
            // libmicrohttpd also calls without data in the middle of a body: after a resume that
            // found nothing buffered yet (the client is slow), and over and over once the client is
            // gone (its socket reads end of file). Neither is the end of a body whose declared
            // length has not arrived: the first is waited out, a run of them ends the connection.
            if let declared = stream.declaredLength, stream.receivedBytes < declared {
                context.emptyBodyCalls += 1
                guard context.emptyBodyCalls > Self.emptyBodyCallsBeforeClosing else { return .YES }
                stream.connectionClosed()
                return .NO
            }
            stream.finish()
            guard let response = context.suspendUntilAnswered() else { return .YES }
            return queue(response, on: context.connection)
        }
        if let response = context.takeResponse() {
            return queue(response, on: context.connection)
        }
        guard context.isAwaitingResponse else { return .YES }  // spurious wake-up while handling
        if context.isTooLarge {
            return respondEarly(context, with: tooLarge)
        }
        guard registerSuspended(context) else {
            return respondEarly(context, with: Self.shuttingDown)
        }
        context.beginHandling()
        MHD_suspend_connection(context.connection)
        let request = context.request
        handlers.spawn { await self.handle(request, context: context) }
        return .YES
    }

    /// How many calls without data in a row, short of a streamed body's declared length, mean
    /// the client is gone (a slow client's resume costs one).
    static let emptyBodyCallsBeforeClosing = 64

    private var tooLarge: HTTPError {
        HTTPError(.payloadTooLarge, code: "PAYLOAD_TOO_LARGE",
                  message: "request body exceeds \(configuration.maxBodyBytes) bytes")
    }

    /// Queues a response the server produced itself (never ran a handler).
    private func respondEarly(_ context: RequestContext, with error: HTTPError) -> MHD_Result {
        context.markQueued()
        var response = error.response
        if context.isTooLarge { response.headers.replaceOrAdd(name: "Connection", value: "close") }
        let result = queue(response, on: context.connection)
        if context.method != nil {
            onResponse?(context.request, response, context.startedAt.duration(to: .now))
        }
        return result
    }

    /// Hands a response to MHD (which copies the body). Headers MHD manages itself are skipped.
    func queue(_ response: HTTPResponse, on connection: OpaquePointer) -> MHD_Result {
        var response = response
        if !(200...599).contains(response.status.rawValue) {
            logger.error("handler returned an invalid status", metadata: ["http.status": response.status.description])
            response = HTTPError.internalError.response
        }
        let created = response.body.withUnsafeBytes { body in
            MHD_create_response_from_buffer(body.count, UnsafeMutableRawPointer(mutating: body.baseAddress),
                                            .RESPMEM_MUST_COPY)
        }
        guard let mhdResponse = created else {
            logger.error("could not allocate a response", metadata: ["http.status": response.status.description])
            return .NO
        }
        defer { MHD_destroy_response(mhdResponse) }
        for (name, value) in response.headers {
            if HTTPHeaders.namesEqual(name, "Content-Length") || HTTPHeaders.namesEqual(name, "Transfer-Encoding") { continue }
            if MHD_add_response_header(mhdResponse, name, value) == MHD_Result.NO {
                logger.warning("dropped an invalid response header", metadata: ["http.header": name])
            }
        }
        if mode != .serving {
            _ = MHD_add_response_header(mhdResponse, "Connection", "close")
        }
        return MHD_queue_response(connection, UInt32(response.status.rawValue), mhdResponse)
    }

    /// Collects the key/value pairs of one kind (headers, query arguments) in arrival order.
    /// Read with their lengths, not as C strings: a `%00` in a query argument stays in the
    /// value (so `days=7%00` is not read as `days=7`), and the handler rejects it.
    private static func values(of connection: OpaquePointer, kind: MHD_ValueKind) -> HTTPHeaders {
        var collected = HTTPHeaders()
        withUnsafeMutablePointer(to: &collected) { pointer in
            _ = MHD_get_connection_values_n(connection, kind, { cls, _, key, keySize, value, valueSize in
                guard let cls, let key else { return .YES }
                let fields = cls.assumingMemoryBound(to: HTTPHeaders.self)
                func text(_ bytes: UnsafePointer<CChar>, _ count: Int) -> String {
                    String(decoding: UnsafeRawBufferPointer(start: bytes, count: count), as: UTF8.self)
                }
                fields.pointee.add(name: text(key, keySize), value: value.map { text($0, valueSize) } ?? "")
                return .YES
            }, pointer)
        }
        return collected
    }
}

extension HTTPHeaders {
    /// Query arguments as a dictionary: the last value of a repeated key wins.
    fileprivate var dictionary: [String: String] {
        var result: [String: String] = [:]
        for (name, value) in self { result[name] = value }
        return result
    }
}

/// A connection handed to a streaming body's pause and resume. `@unchecked Sendable`: the stream
/// calls them under its lock, never after the connection closed (`connectionClosed`), and
/// libmicrohttpd's suspend and resume are callable from any thread.
private struct SuspendableConnection: @unchecked Sendable {
    let pointer: OpaquePointer
}

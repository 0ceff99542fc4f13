import BlockingCalls
import CCurl
import Dispatch
import Foundation

/// One HTTP exchange over libcurl.
public struct HTTPExchange: Sendable {
    public enum Body: Sendable {
        case none
        case bytes([UInt8])
        case file(String)
        /// Exactly `length` bytes read from `source` while they are sent (nothing held in memory).
        case source(any HTTPUploadSource, length: Int64)
    }

    public enum Sink: Sendable {
        case memory
        case file(String)
        /// Chunks go to the continuation as they arrive (only for 2xx answers; an error
        /// answer's body is kept in memory for its code).
        case stream(AsyncThrowingStream<[UInt8], any Error>.Continuation)
    }

    public var method: String
    public var url: String
    public var headers: [(String, String)]
    public var body: Body
    public var sink: Sink
    /// The whole transfer's bound: a large object takes minutes, a small document seconds.
    public var timeoutSeconds: Int

    public init(method: String, url: String, headers: [(String, String)], body: Body = .none, sink: Sink = .memory,
                timeoutSeconds: Int = CurlTransfer.transferTimeoutSeconds) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
        self.sink = sink
        self.timeoutSeconds = timeoutSeconds
    }
}

public struct HTTPAnswer: Sendable {
    public var status: Int
    /// Lower-cased names.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String], body: [UInt8]) {
        self.status = status
        self.headers = headers
        self.body = body
    }
}

/// Where a streamed request body comes from. `read(into:)` runs on the transfer's own thread
/// and may block until bytes are there.
public protocol HTTPUploadSource: AnyObject, Sendable {
    /// Copies the next bytes into `buffer`: how many (0 only at the end), or nil to abort the
    /// transfer — the server then gets a body cut short, and stores nothing.
    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int?
}

/// A transfer that did not get an answer: the server could not be reached, or a local file
/// could not be read or written. An answer of any status is not an error here; the caller
/// decides what its status means.
public struct HTTPClientError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(_ rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The server could not be reached, or the connection broke.
        public static let transport = Code("transport")
        /// A local file (the body to send, or where the answer goes) could not be opened.
        public static let file = Code("file")
    }

    public var code: Code
    public var message: String
    public var isRetriable: Bool { code == .transport }
    public var description: String { "HTTP \(code): \(message)" }

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }
}

/// Runs blocking libcurl transfers on threads of their own (`BlockingCall`: not the threads
/// that run tasks, which a transfer of minutes would otherwise hold), bridged to async callers.
public enum CurlTransfer {
    private static let globalInit: Bool = curl_global_init(Int(CURL_GLOBAL_DEFAULT)) == CURLE_OK

    /// The connection's bound, and the whole transfer's unless the exchange sets its own.
    public static let connectTimeoutSeconds = 10
    public static let transferTimeoutSeconds = 600

    /// `label` names the thread's queue (`objectstore.curl`, `auth.jwks`).
    public static func perform(_ exchange: HTTPExchange, label: String) async throws(HTTPClientError) -> HTTPAnswer {
        try await BlockingCall.run(label) { performBlocking(exchange) }.get()
    }

    /// Starts `exchange` on a thread of its own and calls `completion` there when it ends.
    public static func start(_ exchange: HTTPExchange, label: String,
                             completion: @escaping @Sendable (Result<HTTPAnswer, HTTPClientError>) -> Void) {
        BlockingCall.detach(label) { completion(performBlocking(exchange)) }
    }

    /// Context of one transfer, lent to libcurl's callbacks for the duration of `curl_easy_perform`.
    private final class TransferContext {
        var sink: HTTPExchange.Sink
        var status = 0
        var headers: [String: String] = [:]
        var memory: [UInt8] = []
        var file: FileHandle?
        var upload: [UInt8] = []
        var uploadOffset = 0
        var uploadFile: FileHandle?
        var uploadSource: (any HTTPUploadSource)?
        let handle: UnsafeMutableRawPointer

        init(sink: HTTPExchange.Sink, handle: UnsafeMutableRawPointer) {
            self.sink = sink
            self.handle = handle
        }

        var answerIsSuccess: Bool {
            if status == 0 { status = backbone_curl_response_code(handle) }
            return (200..<300).contains(status)
        }
    }

    private static let writeCallback: backbone_curl_data_callback = { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let ctx = Unmanaged<TransferContext>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        let bytes = UnsafeRawBufferPointer(start: buffer, count: length)
        guard ctx.answerIsSuccess else {
            if ctx.memory.count < 64 * 1024 { ctx.memory.append(contentsOf: bytes) }
            return length
        }
        switch ctx.sink {
        case .memory: ctx.memory.append(contentsOf: bytes)
        case .file: ctx.file?.write(Data(bytes))
        case .stream(let continuation): continuation.yield(Array(bytes))
        }
        return length
    }

    private static let readCallback: backbone_curl_data_callback = { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let ctx = Unmanaged<TransferContext>.fromOpaque(context).takeUnretainedValue()
        let capacity = size * count
        if let source = ctx.uploadSource {
            // CURL_READFUNC_ABORT: the transfer stops, the request is never completed.
            return source.read(into: UnsafeMutableRawBufferPointer(start: buffer, count: capacity)) ?? 0x1000_0000
        }
        if let file = ctx.uploadFile {
            guard let data = try? file.read(upToCount: capacity), !data.isEmpty else { return 0 }
            data.copyBytes(to: UnsafeMutableRawPointer(buffer).assumingMemoryBound(to: UInt8.self), count: data.count)
            return data.count
        }
        let n = min(capacity, ctx.upload.count - ctx.uploadOffset)
        if n > 0 {
            ctx.upload.withUnsafeBytes { src in
                UnsafeMutableRawPointer(buffer).copyMemory(from: src.baseAddress! + ctx.uploadOffset, byteCount: n)
            }
            ctx.uploadOffset += n
        }
        return n
    }

    private static let headerCallback: backbone_curl_data_callback = { buffer, size, count, context in
        guard let buffer, let context else { return 0 }
        let ctx = Unmanaged<TransferContext>.fromOpaque(context).takeUnretainedValue()
        let length = size * count
        let line = String(decoding: UnsafeRawBufferPointer(start: buffer, count: length), as: UTF8.self)
        if line.hasPrefix("HTTP/") {
            ctx.headers = [:]  // a new response (after 100 Continue)
            ctx.status = 0
        } else if let colon = line.firstIndex(of: ":") {
            let name = line[..<colon].lowercased()
            ctx.headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespacesAndNewlines)
        }
        return length
    }

    private static func performBlocking(_ exchange: HTTPExchange) -> Result<HTTPAnswer, HTTPClientError> {
        guard globalInit, let raw = curl_easy_init() else {
            return .failure(HTTPClientError(code: .transport, message: "libcurl could not be initialised"))
        }
        defer { curl_easy_cleanup(raw) }
        let ctx = TransferContext(sink: exchange.sink, handle: raw)

        switch exchange.sink {
        case .file(let path):
            _ = FileManager.default.createFile(atPath: path, contents: nil)  // checked by opening it
            guard let file = FileHandle(forWritingAtPath: path) else {
                return .failure(HTTPClientError(code: .file, message: "cannot write \(path)"))
            }
            ctx.file = file
        default: break
        }
        defer { try? ctx.file?.close(); try? ctx.uploadFile?.close() }

        var uploadLength: Int64 = -1
        switch exchange.body {
        case .none: break
        case .bytes(let bytes):
            ctx.upload = bytes
            uploadLength = Int64(bytes.count)
        case .file(let path):
            guard let file = FileHandle(forReadingAtPath: path),
                  let size = (try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber else {
                return .failure(HTTPClientError(code: .file, message: "cannot read \(path)"))
            }
            ctx.uploadFile = file
            uploadLength = size.int64Value
        case .source(let source, let length):
            ctx.uploadSource = source
            uploadLength = length
        }

        var list: UnsafeMutablePointer<curl_slist>?
        for (name, value) in exchange.headers { list = curl_slist_append(list, "\(name): \(value)") }
        // libcurl adds `Expect: 100-continue` to large uploads; S3 servers handle it, but it costs a round trip.
        list = curl_slist_append(list, "Expect:")
        defer { curl_slist_free_all(list) }

        let context = Unmanaged.passUnretained(ctx).toOpaque()
        let code: CURLcode = withExtendedLifetime(ctx) {
            _ = backbone_curl_set_string(raw, CURLOPT_URL, exchange.url)
            _ = backbone_curl_set_long(raw, CURLOPT_NOSIGNAL, 1)
            _ = backbone_curl_set_long(raw, CURLOPT_CONNECTTIMEOUT, connectTimeoutSeconds)
            _ = backbone_curl_set_long(raw, CURLOPT_TIMEOUT, exchange.timeoutSeconds)
            _ = backbone_curl_set_slist(raw, CURLOPT_HTTPHEADER, list)
            _ = backbone_curl_set_write_function(raw, writeCallback)
            _ = backbone_curl_set_pointer(raw, CURLOPT_WRITEDATA, context)
            _ = backbone_curl_set_header_function(raw, headerCallback)
            _ = backbone_curl_set_pointer(raw, CURLOPT_HEADERDATA, context)
            switch exchange.method {
            case "GET": break
            case "HEAD": _ = backbone_curl_set_long(raw, CURLOPT_NOBODY, 1)
            case "PUT":
                _ = backbone_curl_set_long(raw, CURLOPT_UPLOAD, 1)
                _ = backbone_curl_set_offset(raw, CURLOPT_INFILESIZE_LARGE, curl_off_t(max(uploadLength, 0)))
            default:
                _ = backbone_curl_set_string(raw, CURLOPT_CUSTOMREQUEST, exchange.method)
                if uploadLength >= 0 {
                    _ = backbone_curl_set_long(raw, CURLOPT_POST, 1)
                    _ = backbone_curl_set_offset(raw, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(uploadLength))
                }
            }
            if uploadLength >= 0 {
                _ = backbone_curl_set_read_function(raw, readCallback)
                _ = backbone_curl_set_pointer(raw, CURLOPT_READDATA, context)
            }
            return curl_easy_perform(raw)
        }
        guard code == CURLE_OK else {
            let reason = curl_easy_strerror(code).map { String(cString: $0) } ?? "error \(code.rawValue)"
            return .failure(HTTPClientError(code: .transport, message: reason))
        }
        let status = backbone_curl_response_code(raw)
        return .success(HTTPAnswer(status: status, headers: ctx.headers, body: ctx.memory))
    }
}

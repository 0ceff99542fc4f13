import CWebSockets
import HTTPRouting
import Lifecycle
import ServiceLogging

/// Service-thread state of one plain HTTP request on the WebSocket port.
final class HTTPExchange {
    var request: HTTPRequest
    /// Set when the request is handed to the router; responses are matched by it.
    var id: UInt64 = 0
    var expectsBody: Bool
    var response: HTTPResponse?
    var headersSent = false
    var bodyOffset = 0

    init(request: HTTPRequest, expectsBody: Bool) {
        self.request = request
        self.expectsBody = expectsBody
    }
}

extension ServiceLoop {
    /// Largest body slice written per `LWS_CALLBACK_HTTP_WRITEABLE`.
    static let httpChunkSize = 64 * 1024

    /// A request that is not an upgrade: read it, then route it (now, or once the body is in).
    func beginHTTP(_ wsi: OpaquePointer) -> Int32 {
        let (method, path, pathIsUTF8) = LWSRequestReader.target(wsi)
        let headers = LWSRequestReader.headers(wsi)
        let request = HTTPRequest(
            method: method ?? .get, path: path, query: LWSRequestReader.query(wsi), headers: headers,
            remoteAddress: LWSRequestReader.remoteAddress(wsi))
        let contentLength = headers["content-length"].flatMap { Int($0) } ?? 0
        let chunked = headers["transfer-encoding"]?.lowercased().contains("chunked") ?? false
        let exchange = HTTPExchange(request: request, expectsBody: contentLength > 0 || chunked)
        httpExchanges[wsi] = exchange
        guard method != nil else {
            return respondNow(wsi, exchange, HTTPError(.methodNotAllowed, code: "METHOD_NOT_ALLOWED", message: "method not supported").response)
        }
        guard pathIsUTF8 else { return respondNow(wsi, exchange, HTTPError.pathNotUTF8.response) }
        if contentLength > configuration.maxHTTPBodyBytes {
            return respondNow(wsi, exchange, HTTPError(.payloadTooLarge, code: "PAYLOAD_TOO_LARGE", message: "request body is too large").response)
        }
        if !exchange.expectsBody { dispatch(wsi, exchange) }
        return 0
    }

    func receiveHTTPBody(_ wsi: OpaquePointer, _ input: UnsafeMutableRawPointer?, _ length: Int) -> Int32 {
        guard let exchange = httpExchanges[wsi], exchange.expectsBody, exchange.id == 0 else { return 0 }
        if exchange.request.body.count + length > configuration.maxHTTPBodyBytes {
            exchange.expectsBody = false
            return respondNow(wsi, exchange, HTTPError(.payloadTooLarge, code: "PAYLOAD_TOO_LARGE", message: "request body is too large").response)
        }
        if let input, length > 0 {
            exchange.request.body.append(contentsOf: UnsafeRawBufferPointer(start: input, count: length))
        }
        return 0
    }

    func completeHTTPBody(_ wsi: OpaquePointer) -> Int32 {
        guard let exchange = httpExchanges[wsi], exchange.expectsBody, exchange.id == 0 else { return 0 }
        dispatch(wsi, exchange)
        return 0
    }

    /// Hands the request to the router on a task; the response comes back through the waker.
    private func dispatch(_ wsi: OpaquePointer, _ exchange: HTTPExchange) {
        nextID += 1
        exchange.id = nextID
        wsiByExchange[exchange.id] = wsi
        lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, Int32(configuration.httpResponseTimeout))
        guard let router else {
            exchange.response = HTTPError.notFound("no route for \(exchange.request.method.rawValue) \(exchange.request.path)").response
            lws_callback_on_writable(wsi)
            return
        }
        let request = exchange.request
        let id = exchange.id
        let waker = self.waker
        dispatches.spawn {
            let response = await router.respond(to: request)
            waker.deliver(httpResponse: response, for: id)
        }
    }

    private func respondNow(_ wsi: OpaquePointer, _ exchange: HTTPExchange, _ response: HTTPResponse) -> Int32 {
        nextID += 1
        exchange.id = nextID
        wsiByExchange[exchange.id] = wsi
        exchange.response = response
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Writes the status line and headers first, then the body in slices, then ends the transaction.
    func writeHTTP(_ wsi: OpaquePointer) -> Int32 {
        guard let exchange = httpExchanges[wsi], let response = exchange.response else { return 0 }
        let body = exchange.request.method == .head ? [] : response.body
        if !exchange.headersSent {
            guard writeHTTPHeaders(wsi, response, contentLength: response.body.count) else { return -1 }
            exchange.headersSent = true
            if body.isEmpty { return completeExchange(wsi) }
            lws_callback_on_writable(wsi)
            return 0
        }
        let end = min(body.count, exchange.bodyOffset + Self.httpChunkSize)
        let isLast = end == body.count
        guard writeBytes(wsi, body[exchange.bodyOffset..<end], isLast ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) else { return -1 }
        exchange.bodyOffset = end
        if isLast { return completeExchange(wsi) }
        lws_callback_on_writable(wsi)
        return 0
    }

    /// Status line, `Content-Type`/`Content-Length` and the response's own headers, through lws.
    /// With `statusLine` (an HTTP version) the status line is spelled out instead of taken from lws.
    func writeHTTPHeaders(_ wsi: OpaquePointer, _ response: HTTPResponse, contentLength: Int, statusLine version: String? = nil) -> Bool {
        let skipped: Set<String> = ["content-type", "content-length", "connection", "transfer-encoding"]
        let extra = response.headers.fields.filter { !skipped.contains($0.name.lowercased()) }
        let size = 1024 + extra.reduce(0) { $0 + $1.name.utf8.count + $1.value.utf8.count + 4 }
        reserveScratch(size)
        let start = scratch + pre
        let end = start + size
        var cursor: UnsafeMutablePointer<UInt8>? = start
        // lws_add_http_common_headers takes strlen of the content type: it must not be NULL.
        let contentType = response.headers["Content-Type"] ?? "application/octet-stream"
        if let version {
            let line = Array("\(version) \(response.status.rawValue) \(Self.reasonPhrase(response.status))".utf8)
            guard lws_add_http_header_by_name(wsi, nil, line, Int32(line.count), &cursor, end) == 0 else { return false }
            let type = Array(contentType.utf8)
            guard lws_add_http_header_by_token(wsi, WSI_TOKEN_HTTP_CONTENT_TYPE, type, Int32(type.count), &cursor, end) == 0,
                  lws_add_http_header_content_length(wsi, lws_filepos_t(contentLength), &cursor, end) == 0
            else { return false }
        } else {
            guard lws_add_http_common_headers(wsi, UInt32(response.status.rawValue), contentType,
                                              lws_filepos_t(contentLength), &cursor, end) == 0
            else { return false }
        }
        for field in extra {
            let name = Array((field.name.lowercased() + ":").utf8) + [0]
            let value = Array(field.value.utf8)
            if lws_add_http_header_by_name(wsi, name, value, Int32(value.count), &cursor, end) != 0 { return false }
        }
        return lws_finalize_write_http_header(wsi, start, &cursor, end) == 0
    }

    static func reasonPhrase(_ status: HTTPStatus) -> String {
        switch status.rawValue {
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 409: "Conflict"
        case 413: "Payload Too Large"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Refused"
        }
    }

    private func completeExchange(_ wsi: OpaquePointer) -> Int32 {
        forgetExchange(wsi)
        return lws_http_transaction_completed(wsi) != 0 ? -1 : 0
    }

    func forgetExchange(_ wsi: OpaquePointer) {
        guard let exchange = httpExchanges.removeValue(forKey: wsi) else { return }
        if exchange.id != 0 { wsiByExchange[exchange.id] = nil }
    }
}

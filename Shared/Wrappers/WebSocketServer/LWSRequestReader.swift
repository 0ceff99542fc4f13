import CWebSockets
import HTTPRouting

/// Reads the parsed request (URI, query, headers, peer) of a wsi whose headers are still attached.
/// Service thread only.
enum LWSRequestReader {
    /// Headers lws does not know as tokens but we need (read through its custom-header support).
    static let customHeaderNames = ["x-api-key", "apikey", "x-client-info", "x-request-id", "prefer", "x-forwarded-proto"]

    static func header(_ wsi: OpaquePointer, _ token: lws_token_indexes) -> String? {
        let length = Int(lws_hdr_total_length(wsi, token))
        guard length > 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_copy(wsi, &buffer, Int32(buffer.count), token) >= 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func customHeader(_ wsi: OpaquePointer, _ name: String) -> String? {
        let key = name.lowercased() + ":"
        let keyLength = Int32(key.utf8.count)
        let length = Int(lws_hdr_custom_length(wsi, key, keyLength))
        guard length >= 0 else { return nil }
        var buffer = [CChar](repeating: 0, count: length + 1)
        guard lws_hdr_custom_copy(wsi, &buffer, Int32(buffer.count), key, keyLength) >= 0 else { return nil }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Every header lws parsed as a known token, plus the custom ones we look for.
    static func headers(_ wsi: OpaquePointer) -> HTTPHeaders {
        var headers = HTTPHeaders()
        for raw in 0..<WSI_TOKEN_COUNT.rawValue {
            let token = lws_token_indexes(rawValue: raw)
            guard let namePointer = lws_token_to_string(token) else { continue }
            let name = String(cString: namePointer)
            // URI/method pseudo-tokens are named like "get " or ":path"; real headers end in ':'.
            guard name.count > 1, name.hasSuffix(":"), !name.hasPrefix(":") else { continue }
            if let value = header(wsi, token) { headers.add(name: String(name.dropLast()), value: value) }
        }
        for name in customHeaderNames {
            if let value = customHeader(wsi, name) { headers.add(name: name, value: value) }
        }
        return headers
    }

    /// Query parameters; lws has already split them at '&' and URL-decoded them.
    static func query(_ wsi: OpaquePointer) -> [String: String] {
        var query: [String: String] = [:]
        var index: Int32 = 0
        while true {
            let length = Int(lws_hdr_fragment_length(wsi, WSI_TOKEN_HTTP_URI_ARGS, index))
            guard length > 0 else { break }
            var buffer = [CChar](repeating: 0, count: length + 1)
            if lws_hdr_copy_fragment(wsi, &buffer, Int32(buffer.count), WSI_TOKEN_HTTP_URI_ARGS, index) >= 0 {
                let pair = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
                let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                if let key = parts.first, !key.isEmpty { query[String(key)] = parts.count > 1 ? String(parts[1]) : "" }
            }
            index += 1
        }
        return query
    }

    /// The request path and method (`nil` method for ones we do not route, e.g. CONNECT), and
    /// whether the decoded path is UTF-8 (if not, `path` has U+FFFD for each bad sequence).
    static func target(_ wsi: OpaquePointer) -> (method: HTTPMethod?, path: String, isUTF8: Bool) {
        var uri: UnsafeMutablePointer<CChar>?
        var length: Int32 = 0
        let index = lws_http_get_uri_and_method(wsi, &uri, &length)
        guard index >= 0, let uri else { return (nil, "/", true) }
        let bytes = UnsafeRawBufferPointer(start: uri, count: Int(length))
        let valid = String(validating: bytes, as: UTF8.self)
        let path = valid ?? String(decoding: bytes, as: UTF8.self)
        let method: HTTPMethod? = switch Int(index) {
        case Int(LWSHUMETH_GET): .get
        case Int(LWSHUMETH_POST): .post
        case Int(LWSHUMETH_OPTIONS): .options
        case Int(LWSHUMETH_PUT): .put
        case Int(LWSHUMETH_PATCH): .patch
        case Int(LWSHUMETH_DELETE): .delete
        case Int(LWSHUMETH_HEAD): .head
        default: nil
        }
        return (method, path.isEmpty ? "/" : path, valid != nil)
    }

    static func remoteAddress(_ wsi: OpaquePointer) -> String? {
        var buffer = [CChar](repeating: 0, count: 128)
        guard lws_get_peer_simple(wsi, &buffer, buffer.count) != nil else { return nil }
        let address = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return address.isEmpty ? nil : address
    }
}

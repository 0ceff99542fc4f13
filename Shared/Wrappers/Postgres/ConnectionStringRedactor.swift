import Foundation

/// Removes passwords from libpq connection strings (URL and `key=value` forms).
enum ConnectionStringRedactor {
    static let mask = "***"

    static func redact(_ conninfo: String) -> String {
        if isURL(conninfo) { return redactURL(conninfo) }
        return redactKeyValue(conninfo)
    }

    static func password(in conninfo: String) -> String? {
        if isURL(conninfo) {
            if let range = urlPasswordRange(conninfo) { return String(conninfo[range]).removingPercentEncodingLossy }
            return queryPassword(conninfo).map { String(conninfo[$0]).removingPercentEncodingLossy }
        }
        return keyValuePasswordRange(conninfo).map { String(conninfo[$0]) }
    }

    /// Replaces every occurrence of `secret` in `text` (used on server error messages).
    static func scrub(_ text: String, secret: String?) -> String {
        guard let secret, !secret.isEmpty else { return text }
        return text.replacing(secret, with: mask)
    }

    private static func isURL(_ s: String) -> Bool {
        s.hasPrefix("postgres://") || s.hasPrefix("postgresql://")
    }

    private static func redactURL(_ url: String) -> String {
        var result = url
        if let range = queryPassword(result) { result.replaceSubrange(range, with: mask) }
        if let range = urlPasswordRange(result) { result.replaceSubrange(range, with: mask) }
        return result
    }

    /// The password between `user:` and `@` in the authority part.
    private static func urlPasswordRange(_ url: String) -> Range<String.Index>? {
        guard let scheme = url.range(of: "://") else { return nil }
        let rest = url[scheme.upperBound...]
        let authorityEnd = rest.firstIndex(where: { $0 == "/" || $0 == "?" }) ?? rest.endIndex
        let authority = rest[..<authorityEnd]
        guard let at = authority.lastIndex(of: "@") else { return nil }
        let userInfo = authority[..<at]
        guard let colon = userInfo.firstIndex(of: ":") else { return nil }
        return url.index(after: colon)..<at
    }

    /// `password=…` in the URL query string.
    private static func queryPassword(_ url: String) -> Range<String.Index>? {
        guard let question = url.firstIndex(of: "?") else { return nil }
        var index = url.index(after: question)
        while index < url.endIndex {
            let end = url[index...].firstIndex(of: "&") ?? url.endIndex
            let pair = url[index..<end]
            if pair.hasPrefix("password=") {
                return url.index(index, offsetBy: "password=".count)..<end
            }
            index = end < url.endIndex ? url.index(after: end) : end
        }
        return nil
    }

    private static func redactKeyValue(_ conninfo: String) -> String {
        var result = conninfo
        if let range = keyValuePasswordRange(result) { result.replaceSubrange(range, with: mask) }
        return result
    }

    /// The value of `password = value` / `password='quoted \' value'`.
    private static func keyValuePasswordRange(_ conninfo: String) -> Range<String.Index>? {
        guard let key = conninfo.range(of: "password") else { return nil }
        var index = key.upperBound
        while index < conninfo.endIndex, conninfo[index] == " " { index = conninfo.index(after: index) }
        guard index < conninfo.endIndex, conninfo[index] == "=" else { return nil }
        index = conninfo.index(after: index)
        while index < conninfo.endIndex, conninfo[index] == " " { index = conninfo.index(after: index) }
        guard index < conninfo.endIndex else { return nil }
        if conninfo[index] == "'" {
            let start = conninfo.index(after: index)
            var cursor = start
            while cursor < conninfo.endIndex, conninfo[cursor] != "'" {
                if conninfo[cursor] == "\\" { cursor = conninfo.index(after: cursor) }
                if cursor < conninfo.endIndex { cursor = conninfo.index(after: cursor) }
            }
            return start..<min(cursor, conninfo.endIndex)
        }
        let end = conninfo[index...].firstIndex(of: " ") ?? conninfo.endIndex
        return index..<end
    }
}

extension String {
    /// Percent-decodes, keeping the input when it is not valid percent-encoding.
    var removingPercentEncodingLossy: String {
        var bytes: [UInt8] = []
        var iterator = Array(utf8)[...]
        while let byte = iterator.popFirst() {
            if byte == UInt8(ascii: "%"), iterator.count >= 2,
               let value = UInt8(String(decoding: iterator.prefix(2), as: UTF8.self), radix: 16) {
                bytes.append(value)
                iterator = iterator.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

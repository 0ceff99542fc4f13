import Foundation

/// The few elements of S3's XML answers the store reads (`<Code>`, `<UploadId>`, `<Contents>`…).
/// S3 answers are flat and machine-written; this reads element text, not arbitrary XML.
enum S3XML {
    /// The text of every `<name>…</name>` in `body`, unescaped.
    static func all(_ name: String, in body: [UInt8]) -> [[UInt8]] {
        let open = Array("<\(name)>".utf8), close = Array("</\(name)>".utf8)
        var results: [[UInt8]] = []
        var index = 0
        while let start = find(open, in: body, from: index), let end = find(close, in: body, from: start + open.count) {
            results.append(Array(body[(start + open.count)..<end]))
            index = end + close.count
        }
        return results
    }

    static func first(_ name: String, in body: [UInt8]) -> String? {
        all(name, in: body).first.map { unescape(String(decoding: $0, as: UTF8.self)) }
    }

    private static func find(_ needle: [UInt8], in haystack: [UInt8], from start: Int) -> Int? {
        guard !needle.isEmpty, haystack.count >= needle.count, start <= haystack.count - needle.count else { return nil }
        var i = start
        while i <= haystack.count - needle.count {
            if haystack[i] == needle[0] && haystack[i..<(i + needle.count)].elementsEqual(needle) { return i }
            i += 1
        }
        return nil
    }

    static func unescape(_ text: String) -> String {
        guard text.contains("&") else { return text }
        return text.replacingOccurrences(of: "&quot;", with: "\"").replacingOccurrences(of: "&#34;", with: "\"")
            .replacingOccurrences(of: "&apos;", with: "'").replacingOccurrences(of: "&lt;", with: "<")
            .replacingOccurrences(of: "&gt;", with: ">").replacingOccurrences(of: "&amp;", with: "&")
    }

    static func escape(_ text: String) -> String {
        text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
            .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
}

import Foundation
import HTTPRouting
import ObjectStore

/// The object's bytes out of a signed upload's request body, relayed to the store as they arrive
/// (`HTTPUploadSource`, read on the transfer's own thread): a raw body (a `PUT` of the file, as a
/// background `URLSessionUploadTask` sends it), or the `file` field of a `multipart/form-data`
/// body (what Supabase's storage clients post: a `cacheControl` field, then `file`).
///
/// It hands the store exactly `length` bytes and holds the last one back until the body is seen
/// to end there (a raw body's end, or the form's closing delimiter): a body shorter or longer
/// than the token admits aborts the transfer before the store has the whole object, so nothing
/// is stored. Nothing is held but the piece in flight.
final class SignedUploadBody: HTTPUploadSource, @unchecked Sendable {
    private let stream: HTTPBodyStream
    /// The form's boundary, for a multipart body.
    private let boundary: [UInt8]?
    /// The object's size (known before the transfer starts).
    private(set) var length: Int64 = 0
    private var pending: [UInt8] = []
    private var start = 0
    private var sent: Int64 = 0
    /// Body bytes before the object's first byte (a form's preamble and its part headers).
    private(set) var preambleBytes: Int64 = 0
    /// Why the transfer was aborted, when it was.
    private(set) var failure: String?

    /// The most a form may carry around the file (other fields, headers, the closing delimiter).
    static let maxFormOverhead = 64 << 10

    init(stream: HTTPBodyStream, boundary: String?) {
        self.stream = stream
        self.boundary = boundary.map { Array("--\($0)".utf8) }
    }

    /// The boundary of a `multipart/form-data` content type; nil for any other body.
    static func formBoundary(_ contentType: String?) -> String?? {
        guard let contentType, contentType.lowercased().hasPrefix("multipart/form-data") else { return .some(nil) }
        for parameter in contentType.split(separator: ";").dropFirst() {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, pair[0].trimmingCharacters(in: .whitespaces).lowercased() == "boundary" else { continue }
            let value = pair[1].trimmingCharacters(in: .whitespaces).trimmingCharacters(in: CharacterSet(charactersIn: "\""))
            if (1...70).contains(value.utf8.count) { return .some(value) }
        }
        return nil
    }

    /// The closing delimiter after the file: `\r\n--{boundary}--\r\n`.
    private var closing: [UInt8] { Array("\r\n".utf8) + (boundary ?? []) + Array("--\r\n".utf8) }

    /// Reads a form up to the first byte of its `file` field (blocking: on a thread of its own).
    /// False (with `failure`) for a malformed form.
    func readFormPreamble() -> Bool {
        guard let boundary else { return true }
        let limit = Self.maxFormOverhead
        while true {
            // A part: the delimiter line, headers up to an empty line.
            guard let delimiter = find(boundary, from: start, within: limit),
                  let headersEnd = find(Array("\r\n\r\n".utf8), from: delimiter, within: limit) else {
                return fail("the form has no file field")
            }
            let headers = String(decoding: pending[(delimiter + boundary.count)..<headersEnd], as: UTF8.self).lowercased()
            start = headersEnd + 4
            if headers.contains("name=\"file\"") {
                preambleBytes = Int64(start)
                return true
            }
            // Another field (cacheControl, metadata): skip its value.
            guard find(Array("\r\n".utf8) + boundary, from: start, within: limit) != nil else {
                return fail("a form field is not closed")
            }
        }
    }

    /// Sets the object's size; a size the token does not admit is refused by the caller.
    func expect(_ length: Int64) { self.length = length }

    /// The object's size for a form of `total` bytes whose file is its last field.
    func formFileSize(total: Int64) -> Int64 { total - preambleBytes - Int64(closing.count) }

    func read(into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let remaining = length - sent
        guard remaining > 0 else { return 0 }
        if start == pending.count {
            pending.removeAll(keepingCapacity: true)
            start = 0
            guard fill() else { return fail("the body ended after \(sent) of \(length) bytes") }
        }
        var n = min(buffer.count, pending.count - start)
        if Int64(n) >= remaining {
            n = Int(remaining)
            // The last byte: only once the body is seen to end right after it.
            guard confirmEnd(after: start + n) else { return nil }
        }
        pending.withUnsafeBytes { source in
            buffer.baseAddress!.copyMemory(from: source.baseAddress!.advanced(by: start), byteCount: n)
        }
        start += n
        sent += Int64(n)
        return n
    }

    /// Whether everything after `index` in the body is the end: nothing (raw), or the form's
    /// closing delimiter.
    private func confirmEnd(after index: Int) -> Bool {
        let expected = boundary == nil ? [] : closing
        while pending.count - index < expected.count + 1 {
            let before = pending.count
            guard fillOnce() else { return fail("the body broke off") }
            if pending.count == before { break }  // the end of the body
        }
        let rest = Array(pending[index...])
        if boundary == nil {
            return rest.isEmpty ? true : fail("the body is longer than \(length) bytes")
        }
        // The file ends where the form's closing delimiter begins (`\r\n--{boundary}--`).
        let delimiter = Array(expected.dropLast(2))
        guard rest.count >= delimiter.count, rest.prefix(delimiter.count).elementsEqual(delimiter) else {
            return fail("the file is not \(length) bytes")
        }
        return true
    }

    /// Appends what the stream has (at least one byte); false at the end of the body or when it broke off.
    private func fill() -> Bool {
        let before = pending.count
        return fillOnce() && pending.count > before
    }

    private func fillOnce() -> Bool {
        var chunk = [UInt8](repeating: 0, count: 64 << 10)
        guard let n = chunk.withUnsafeMutableBytes({ stream.read(into: $0) }) else { return false }
        pending.append(contentsOf: chunk.prefix(n))
        return true
    }

    /// The first index of `needle` at or after `from`, reading more of the body as needed, up to `within` bytes.
    private func find(_ needle: [UInt8], from: Int, within: Int) -> Int? {
        var searched = from
        while true {
            if pending.count - searched >= needle.count {
                let last = pending.count - needle.count
                var i = searched
                while i <= last {
                    if pending[i] == needle[0], pending[i..<(i + needle.count)].elementsEqual(needle) { return i }
                    i += 1
                }
                searched = last + 1
            }
            guard pending.count < within, fill() else { return nil }
        }
    }

    private func fail(_ reason: String) -> Bool {
        failure = failure ?? reason
        return false
    }

    private func fail(_ reason: String) -> Int? {
        failure = failure ?? reason
        return nil
    }
}

import Foundation

/// A W3C Trace Context (`traceparent: 00-<trace-id>-<parent-id>-<flags>`): the one id an
/// event's path through the system is followed by. Ingest takes it from the request (or starts
/// one), answers it in `traceresponse`, and every record it produces carries it in the
/// `traceparent` Kafka header; each consumer passes it on to what it produces. Work done for
/// a *sampled* trace (flag `01`, as the caller asked) is logged with `trace_id`, so one
/// event's path is a `grep`; unsampled traces only travel.
public struct TraceContext: Sendable, Hashable, CustomStringConvertible {
    /// 32 lowercase hex digits, not all zero.
    public let traceID: String
    /// 16 lowercase hex digits, not all zero: the span that produced what carries it.
    public let parentID: String
    public let sampled: Bool

    /// The trace of the work this task does (an HTTP request, a job): records produced without a
    /// `traceparent` header get this one, and log lines of a sampled trace get its `trace_id`.
    @TaskLocal public static var current: TraceContext?

    /// The header (HTTP and Kafka) that carries it.
    public static let header = "traceparent"
    /// The HTTP answer's header (Trace Context Level 2).
    public static let responseHeader = "traceresponse"

    /// Parses a `traceparent` value; nil when it is not a valid one (the version `ff`, ids all
    /// zeros or not lowercase hex, a version `00` value with more fields).
    public init?(traceparent value: String) {
        var value = value
        let ascii = value.withUTF8 { Self.parseASCII($0) }
        switch ascii {
        case .valid(let trace): self = trace
        case .invalid: return nil
        case .notASCII: self.init(unicodeTraceparent: value)
        }
    }

    /// Parses a `traceparent` header's bytes (UTF-8), as `init?(traceparent:)` does its text.
    public init?(traceparent bytes: [UInt8]) {
        switch bytes.withUnsafeBufferPointer({ Self.parseASCII($0) }) {
        case .valid(let trace): self = trace
        case .invalid: return nil
        case .notASCII: self.init(traceparent: String(decoding: bytes, as: UTF8.self))
        }
    }

    private enum ASCIIParse {
        case valid(TraceContext)
        case invalid
        /// Holds a byte past ASCII: left to the Unicode-aware parse (whitespace beyond ASCII is trimmed too).
        case notASCII
    }

    /// The usual case, read straight from the bytes: an ASCII value, spaces and tabs around it
    /// trimmed (the only ASCII members of `CharacterSet.whitespaces`), `-`-separated fields
    /// checked as `init(unicodeTraceparent:)` checks them. Each record a consumer reads is
    /// parsed here, so no Foundation string and no array of fields is made.
    private static func parseASCII(_ bytes: UnsafeBufferPointer<UInt8>) -> ASCIIParse {
        for byte in bytes where byte >= 0x80 { return .notASCII }
        var start = 0, end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        // Field boundaries: the first four fields, and whether there are more.
        var bounds: [Range<Int>] = []
        bounds.reserveCapacity(4)
        var fieldStart = start, fields = 1
        for index in start..<end where bytes[index] == UInt8(ascii: "-") {
            if bounds.count < 4 { bounds.append(fieldStart..<index) }
            fieldStart = index + 1
            fields += 1
        }
        if bounds.count < 4 { bounds.append(fieldStart..<end) }
        func isHex(_ range: Range<Int>) -> Bool {
            bytes[range].allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
        }
        func isNonZero(_ range: Range<Int>) -> Bool { bytes[range].contains { $0 != UInt8(ascii: "0") } }
        guard fields >= 4 else { return .invalid }
        let version = bounds[0], trace = bounds[1], parent = bounds[2], flags = bounds[3]
        guard version.count == 2, isHex(version), !(bytes[version.lowerBound] == 0x66 && bytes[version.lowerBound + 1] == 0x66),
              bytes[version].contains(where: { $0 != UInt8(ascii: "0") }) || fields == 4,
              trace.count == 32, isHex(trace), isNonZero(trace),
              parent.count == 16, isHex(parent), isNonZero(parent),
              flags.count == 2, isHex(flags) else { return .invalid }
        func hexValue(_ byte: UInt8) -> UInt8 { byte <= 0x39 ? byte - 0x30 : byte - 0x61 + 10 }
        let flagBits = hexValue(bytes[flags.lowerBound]) << 4 | hexValue(bytes[flags.lowerBound + 1])
        return .valid(TraceContext(traceID: String(decoding: UnsafeBufferPointer(rebasing: bytes[trace]), as: UTF8.self),
                                   parentID: String(decoding: UnsafeBufferPointer(rebasing: bytes[parent]), as: UTF8.self),
                                   sampled: flagBits & 1 == 1))
    }

    /// The general parse, for values with bytes past ASCII.
    private init?(unicodeTraceparent value: String) {
        let fields = value.trimmingCharacters(in: .whitespaces).split(separator: "-", omittingEmptySubsequences: false)
        guard fields.count >= 4, fields[0].count == 2, fields[0] != "ff", Self.isHex(fields[0]),
              fields[0] != "00" || fields.count == 4,
              fields[1].count == 32, Self.isHex(fields[1]), fields[1].contains(where: { $0 != "0" }),
              fields[2].count == 16, Self.isHex(fields[2]), fields[2].contains(where: { $0 != "0" }),
              fields[3].count == 2, Self.isHex(fields[3]), let flags = UInt8(fields[3], radix: 16) else { return nil }
        traceID = String(fields[1])
        parentID = String(fields[2])
        sampled = flags & 1 == 1
    }

    init(traceID: String, parentID: String, sampled: Bool) {
        self.traceID = traceID
        self.parentID = parentID
        self.sampled = sampled
    }

    /// A new trace (this process is its first span).
    public static func start(sampled: Bool = false) -> TraceContext {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 3) { words in
            repeat { TraceIDSource.shared.fill(words) } while words[0] == 0 && words[1] == 0 || words[2] == 0
            return TraceContext(traceID: hex(words[0], words[1]), parentID: hex(words[2]), sampled: sampled)
        }
    }

    /// The same trace, with a new span of this process as the parent of what it produces.
    public func child() -> TraceContext {
        withUnsafeTemporaryAllocation(of: UInt64.self, capacity: 1) { words in
            repeat { TraceIDSource.shared.fill(words) } while words[0] == 0
            return TraceContext(traceID: traceID, parentID: Self.hex(words[0]), sampled: sampled)
        }
    }

    public var traceparent: String { "00-\(traceID)-\(parentID)-0\(sampled ? 1 : 0)" }
    public var description: String { traceparent }

    private static func isHex(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The words as lowercase hex, 16 digits each (leading zeros kept): 16 digits, or 32 with `low`.
    static func hex(_ high: UInt64, _ low: UInt64? = nil) -> String {
        String(unsafeUninitializedCapacity: low == nil ? 16 : 32) { buffer in
            func put(_ word: UInt64, at start: Int) {
                for index in 0..<16 {
                    let digit = UInt8(truncatingIfNeeded: word >> UInt64(60 - 4 * index)) & 0x0F
                    buffer[start + index] = digit < 10 ? UInt8(ascii: "0") + digit : UInt8(ascii: "a") + digit - 10
                }
            }
            put(high, at: 0)
            if let low { put(low, at: 16) }
            return low == nil ? 16 : 32
        }
    }
}

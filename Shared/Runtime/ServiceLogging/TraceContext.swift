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
        TraceContext(traceID: randomHex(bytes: 16), parentID: randomHex(bytes: 8), sampled: sampled)
    }

    /// The same trace, with a new span of this process as the parent of what it produces.
    public func child() -> TraceContext {
        TraceContext(traceID: traceID, parentID: Self.randomHex(bytes: 8), sampled: sampled)
    }

    public var traceparent: String { "00-\(traceID)-\(parentID)-0\(sampled ? 1 : 0)" }
    public var description: String { traceparent }

    private static func isHex(_ text: Substring) -> Bool {
        text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `bytes` (a multiple of 8) random bytes as lowercase hex, not all zero.
    private static func randomHex(bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        while true {
            let words = (0..<(bytes / 8)).map { _ in generator.next() as UInt64 }
            guard words.contains(where: { $0 != 0 }) else { continue }
            return words.map { word in
                let hex = String(word, radix: 16)
                return String(repeating: "0", count: 16 - hex.count) + hex
            }.joined()
        }
    }
}

import Kafka
import ServiceLogging
import Testing

/// Every record a consumer reads has its `traceparent` header parsed; the bytes are read
/// directly when they are ASCII, and values with other bytes take the Unicode-aware path.
@Suite("traceparent parsing")
struct TraceparentParsingTests {
    static let trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parent = "00f067aa0ba902b7"

    @Test("a valid value gives its trace id, parent id and sampled flag, from text or from a header's bytes alike")
    func valid() throws {
        for (value, sampled) in [("00-\(Self.trace)-\(Self.parent)-01", true), ("00-\(Self.trace)-\(Self.parent)-00", false),
                                 ("00-\(Self.trace)-\(Self.parent)-03", true), ("00-\(Self.trace)-\(Self.parent)-fe", false),
                                 (" \t00-\(Self.trace)-\(Self.parent)-01\t ", true),
                                 ("01-\(Self.trace)-\(Self.parent)-01-future-fields", true)] {
            let parsed = try #require(TraceContext(traceparent: value), "\(value)")
            #expect(parsed.traceID == Self.trace && parsed.parentID == Self.parent && parsed.sampled == sampled)
            #expect(TraceContext(traceparent: Array(value.utf8)) == parsed)
            #expect([KafkaHeader(key: TraceContext.header, value: Array(value.utf8))].trace == parsed)
        }
    }

    @Test("whitespace beyond ASCII around the value is trimmed as before; inside it, or any other byte, is refused")
    func unicode() {
        let value = "00-\(Self.trace)-\(Self.parent)-01"
        #expect(TraceContext(traceparent: "\u{00A0}\(value)\u{3000}")?.traceID == Self.trace)
        #expect(TraceContext(traceparent: Array("\u{2003}\(value)".utf8))?.parentID == Self.parent)
        #expect(TraceContext(traceparent: "00-\(Self.trace)-\(Self.parent)-0\u{0661}") == nil)
        #expect(TraceContext(traceparent: [0x30, 0x30, 0x2D, 0xFF]) == nil)
    }

    @Test("malformed values are refused: version ff, a version 00 with more fields, ids all zeros, upper case, wrong lengths, line breaks")
    func invalid() {
        let zeros32 = String(repeating: "0", count: 32), zeros16 = String(repeating: "0", count: 16)
        for value in ["", "-", "---", "00", "00-\(Self.trace)-\(Self.parent)", "ff-\(Self.trace)-\(Self.parent)-01",
                      "00-\(Self.trace)-\(Self.parent)-01-more", "00-\(zeros32)-\(Self.parent)-01", "00-\(Self.trace)-\(zeros16)-01",
                      "00-\(Self.trace.uppercased())-\(Self.parent)-01", "00-\(Self.trace)-\(Self.parent.uppercased())-01",
                      "00-\(Self.trace)-\(Self.parent)-1", "00-\(Self.trace)-\(Self.parent)-001", "0-\(Self.trace)-\(Self.parent)-01",
                      "00-\(Self.trace)0-\(Self.parent)-01", "00-\(Self.trace)-\(Self.parent)0-01", "00-\(Self.trace)-\(Self.parent)-0g",
                      "00-\(Self.trace)-\(Self.parent)-01\n", "\r\n00-\(Self.trace)-\(Self.parent)-01", "00--\(Self.trace)-\(Self.parent)-01",
                      "00-\(Self.trace)-\(Self.parent)-01-", "0x-\(Self.trace)-\(Self.parent)-01"] {
            #expect(TraceContext(traceparent: value) == nil, "\(value)")
            #expect(TraceContext(traceparent: Array(value.utf8)) == nil, "\(value)")
        }
    }
}

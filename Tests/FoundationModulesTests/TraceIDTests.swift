@testable import ServiceLogging
import Testing

/// Every HTTP request without a caller's `traceparent` starts a trace, and every request a span.
@Suite("new trace and span ids")
struct TraceIDTests {
    static func isLowerHex(_ text: String, count: Int) -> Bool {
        text.utf8.count == count && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    @Test("new traces and spans have lowercase hex ids of 32 and 16 digits, never all zeros, never repeated, and parse back")
    func traceIDs() throws {
        var traces = Set<String>(), spans = Set<String>()
        for index in 0..<3000 {  // past several refills of the random pool
            let trace = TraceContext.start(sampled: index % 2 == 0)
            let child = trace.child()
            #expect(Self.isLowerHex(trace.traceID, count: 32) && Self.isLowerHex(trace.parentID, count: 16))
            #expect(child.traceID == trace.traceID && child.sampled == trace.sampled && Self.isLowerHex(child.parentID, count: 16))
            #expect(TraceContext(traceparent: trace.traceparent) == trace)
            traces.insert(trace.traceID)
            spans.insert(trace.parentID)
            spans.insert(child.parentID)
        }
        #expect(traces.count == 3000 && spans.count == 6000)
    }

    @Test("ids are written with their leading zeros, high word first")
    func hexDigits() {
        #expect(TraceContext.hex(1) == "0000000000000001")
        #expect(TraceContext.hex(0xABCDEF, 0x1000_0000_0000_0000) == "0000000000abcdef1000000000000000")
        #expect(TraceContext.hex(.max) == "ffffffffffffffff")
    }
}

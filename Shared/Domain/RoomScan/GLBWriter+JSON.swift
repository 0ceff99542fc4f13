import Contracts
import JSON

extension GLBWriter {
    /// The glTF JSON chunk of the tree `finish()` builds — dictionaries (keys sorted), arrays,
    /// strings, integers, doubles, booleans — written compactly, strings and numbers through
    /// the project's `JSONWriter` (its escaping and number format).
    ///
    /// Foundation's `JSONSerialization` bridges every value of an `Any` tree through its
    /// Objective-C types (`NSNumber`, `NSString`) with dynamic casts; on the 10 MB benchmark
    /// package that was a fifth of a transcode's instructions, for 21 JSON chunks of a few KB.
    static func jsonBytes(_ tree: Any) throws -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 * 1024)
        try write(tree, into: &out)
        return out
    }

    private static func write(_ value: Any, into out: inout [UInt8]) throws {
        switch value {
        case let object as [String: Any]:
            out.append(UInt8(ascii: "{"))
            for (index, key) in object.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                scalar(into: &out) { $0.string(key) }
                out.append(UInt8(ascii: ":"))
                try write(object[key]!, into: &out)
            }
            out.append(UInt8(ascii: "}"))
        case let objects as [[String: Any]]:
            try array(objects, into: &out)
        case let items as [Any]:
            try array(items, into: &out)
        case let text as String:
            scalar(into: &out) { $0.string(text) }
        case let flag as Bool:
            out.append(contentsOf: (flag ? "true" : "false").utf8)
        case let integer as Int:
            out.append(contentsOf: String(integer).utf8)
        case let number as Double:
            guard number.isFinite else { throw RoomScanError(.geometryInvalid, "a GLB number is not finite: \(number)") }
            scalar(into: &out) { $0.double(number) }
        case let number as Float:
            guard number.isFinite else { throw RoomScanError(.geometryInvalid, "a GLB number is not finite: \(number)") }
            scalar(into: &out) { $0.double(Double(number)) }
        default:
            throw RoomScanError(.geometryInvalid, "a GLB JSON value of type \(type(of: value))")
        }
    }

    private static func array(_ items: [some Any], into out: inout [UInt8]) throws {
        out.append(UInt8(ascii: "["))
        for (index, item) in items.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            try write(item, into: &out)
        }
        out.append(UInt8(ascii: "]"))
    }

    /// One string or number as `JSONWriter` writes it.
    private static func scalar(into out: inout [UInt8], _ body: (inout JSONWriter) -> Void) {
        var writer = JSONWriter(capacity: 32)
        body(&writer)
        out.append(contentsOf: writer.bytes)
    }
}

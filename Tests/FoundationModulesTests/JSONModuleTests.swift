import Foundation
import JSON
import JSONReader
import Testing

@Suite("JSON text")
struct JSONModuleTests {
    /// Every byte class the escaper treats apart: quotes, backslash, each control character,
    /// `/`, DEL and non-ASCII.
    static let awkward = "\"\\/" + String((0..<0x20).map { Character(Unicode.Scalar($0)!) }) + "\u{7F}é漢🙂 done"

    @Test("strings are escaped byte for byte as JSONEncoder escapes them (slashes unescaped)")
    func stringsEscapeAsFoundation() throws {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.withoutEscapingSlashes]
        for text in [Self.awkward, "", "plain", "line\nbreak"] {
            #expect(JSONString.quote(text) == String(decoding: try encoder.encode(text), as: UTF8.self))
        }
    }

    @Test("JSONValue writes the bytes its Encodable conformance writes, keys sorted")
    func writerMatchesEncodable() throws {
        let value = JSONValue.object([
            "z": .array([.null, .bool(true), .number(1200), .number(0.42), .number(1e20), .number(-3)]),
            "a": .string(Self.awkward),
            "m": .object(["b": .number(2), "a": .object([:])]),
        ])
        var writer = JSONWriter()
        writer.value(value)
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        #expect(String(decoding: writer.bytes, as: UTF8.self) == String(decoding: try encoder.encode(value), as: UTF8.self))
    }

    @Test("the token reader hands over every token in order, and stops when told")
    func tokensInOrder() throws {
        let text = #"{"a":[1,-2.5e3,"x\u00e9",true,false,null],"b":{}}"#
        let recorder = Recorder()
        #expect(try JSONTokenReader.read(Array(text.utf8), into: recorder))
        #expect(recorder.seen == ["{", "key a", "[", "number 1", "number -2.5e3", "string xé", "true", "false", "null", "end",
                                  "key b", "{", "end", "end"])

        let stopping = Recorder(stopAfter: 3)
        #expect(try JSONTokenReader.read(Array(text.utf8), into: stopping) == false)
        #expect(stopping.seen == ["{", "key a", "["])
    }

    @Test("text that is not one JSON value is refused with yajl's message", arguments: [
        "", "{", #"{"a":}"#, "[1,]", "{} {}", "tru", "\"\u{01}\"",
    ])
    func syntaxErrors(_ text: String) {
        #expect(throws: JSONTokenReader.SyntaxError.self) { try JSONTokenReader.read(Array(text.utf8), into: Recorder()) }
    }

    @Test("invalid UTF-8 in a string is refused")
    func invalidUTF8() {
        #expect(throws: JSONTokenReader.SyntaxError.self) {
            try JSONTokenReader.read([UInt8(ascii: "\""), 0xC3, 0x28, UInt8(ascii: "\"")], into: Recorder())
        }
    }

    @Test("numbers read with Foundation's rules: an integer is any number exactly an Int, a double any finite one")
    func numbers() {
        func integer(_ text: String) -> Int? { Array(text.utf8).withUnsafeBytes { JSONNumber.integer($0) } }
        func double(_ text: String) -> Double? { Array(text.utf8).withUnsafeBytes { JSONNumber.double($0) } }
        #expect(integer("3") == 3)
        #expect(integer("3.0") == 3)
        #expect(integer("1e2") == 100)
        #expect(integer("-9223372036854775808") == .min)
        #expect(integer("9223372036854775808") == nil)
        #expect(integer("2.5") == nil)
        #expect(double("0.42") == 0.42)
        #expect(double("1e400") == nil)
    }
}

/// Writes down each token as text.
private final class Recorder: JSONTokenHandler {
    var seen: [String] = []
    let stopAfter: Int

    init(stopAfter: Int = .max) { self.stopAfter = stopAfter }

    private func note(_ text: String) -> Bool {
        seen.append(text)
        return seen.count < stopAfter
    }

    func value(_ token: JSONToken) -> Bool {
        switch token {
        case .null: note("null")
        case .boolean(let value): note("\(value)")
        case .number(let text): note("number " + String(decoding: text, as: UTF8.self))
        case .string(let text): note("string " + String(decoding: text, as: UTF8.self))
        case .startObject: note("{")
        case .startArray: note("[")
        }
    }

    func key(_ name: UnsafeRawBufferPointer) -> Bool { note("key " + String(decoding: name, as: UTF8.self)) }
    func end() -> Bool { note("end") }
}

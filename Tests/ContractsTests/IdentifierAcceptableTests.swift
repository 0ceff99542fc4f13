import Contracts
import Testing

/// User ids, room ids and names reach the pipeline only without whitespace or control
/// characters; ASCII ones are checked from their bytes, the rest scalar by scalar.
@Suite("Identifier.isAcceptable")
struct IdentifierAcceptableTests {
    @Test("printable ids are accepted, ASCII or not; empty or too long ones are not")
    func accepted() {
        for value in ["u1", "user-123_abc.def@x", "~!#$%^&*()[]{}|;:'\",<>/?`=+", "学生-七", "café", "😀x"] {
            #expect(Identifier.isAcceptable(value), "\(value)")
        }
        #expect(!Identifier.isAcceptable(""))
        #expect(Identifier.isAcceptable(String(repeating: "a", count: Identifier.maxUTF8Length)))
        #expect(!Identifier.isAcceptable(String(repeating: "a", count: Identifier.maxUTF8Length + 1)))
        #expect(!Identifier.isAcceptable("abcd", maxUTF8Length: 3))
    }

    @Test("whitespace, control and format characters are refused wherever they are, before or after other scalars")
    func refused() {
        for bad in [" ", "\t", "\n", "\r", "\u{0B}", "\u{0C}", "\u{00}", "\u{1F}", "\u{7F}", "\u{85}", "\u{A0}", "\u{2003}", "\u{3000}",
                    "\u{200B}", "\u{FEFF}", "\u{E000}"] {
            for value in ["\(bad)abc", "ab\(bad)c", "abc\(bad)", "学\(bad)", "\(bad)学"] {
                #expect(!Identifier.isAcceptable(value), "\(value.unicodeScalars.map { String($0.value, radix: 16) })")
            }
        }
    }
}

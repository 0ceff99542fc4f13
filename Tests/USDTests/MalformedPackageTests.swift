import Foundation
import Testing
@testable import USD

@Suite("Malformed packages give findings or typed errors")
struct MalformedPackageTests {
    static let cases: [String] = {
        let expected = (try? Fixtures.expected("malformed")) ?? [:]
        return expected.keys.sorted()
    }()

    @Test("each malformed fixture is refused or reported with the expected code", arguments: cases)
    func malformed(name: String) throws {
        let expected = try #require(try Fixtures.expected("malformed")[name] as? [String: Any])
        let readable = expected["readable"] as? Bool ?? false
        let codes = expected["findings"] as? [String] ?? []
        let report = USDInspectCommand.inspect(path: Fixtures.path(name))
        let found = Set(report.findings.map(\.code.rawValue))
        for code in codes { #expect(found.contains(code), "\(name): \(report.findings)") }
        if readable {
            #expect(report.prims.contains { $0.path == "/World" }, "\(name) should still be readable: \(report.findings)")
        } else {
            #expect(report.prims.isEmpty)
            #expect(report.hasErrors)
        }
    }

    @Test("an error names where it happened")
    func errorContext() {
        let text = Array("#usda 1.0\ndef Xform \"A\" {\n  double3 xformOp:translate = (1, 2\n}\n".utf8)
        do {
            _ = try USDAParser.parse(text[...], identifier: "bad.usda")
            Issue.record("parsing should fail")
        } catch let error as USDError {
            #expect(error.code == .syntax)
            #expect(error.context.contains("bad.usda line"))
            #expect(!error.isRetriable)
        } catch {
            Issue.record("untyped error \(error)")
        }
    }

    @Test("a zip declaring entries past its end is refused without reading them")
    func hugeDeclaredSizes() throws {
        var bytes = Fixtures.bytes("misaligned")
        // Corrupt the first central directory entry's sizes to 0xFFFFFFF0.
        let signature: [UInt8] = [0x50, 0x4B, 0x01, 0x02]
        let at = try #require((0..<(bytes.count - 4)).first { Array(bytes[$0..<($0 + 4)]) == signature })
        for offset in [20, 24] { for i in 0..<4 { bytes[at + offset + i] = i == 0 ? 0xF0 : 0xFF } }
        #expect(throws: USDError.self) { _ = try USDStage(package: USDZPackage(bytes: bytes)) }
    }
}

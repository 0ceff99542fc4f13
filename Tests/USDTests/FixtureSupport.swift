import Foundation
@testable import USD

/// Paths and expectations of the fixtures written by `Fixtures/generate.py` (usd-core).
enum Fixtures {
    static let directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")

    static func path(_ name: String) -> String { directory.appendingPathComponent(name + ".usdz").path }

    static func bytes(_ name: String) -> [UInt8] { [UInt8](FileManager.default.contents(atPath: path(name)) ?? Data()) }

    static func expected(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: directory.appendingPathComponent(name + ".expected.json"))
        return try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]
    }

    static let wellFormed = ["basic_usda", "basic_usdc", "roomplan", "roomplan_usdc", "roomscan", "roomscan_usdc", "roomscan_open"]

    static var all: [String] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory.path)) ?? []
        return names.filter { $0.hasSuffix(".usdz") }.map { String($0.dropLast(5)) }.sorted()
    }
}

/// `|a - b| <= 1e-5 · max(1, |a|, |b|)`.
func close(_ a: Double, _ b: Double) -> Bool {
    abs(a - b) <= 1e-5 * max(1, abs(a), abs(b))
}

import Contracts
import Foundation
import Hashing
import Testing
import USD
@testable import RoomScan

@Suite("Room transcoder", .serialized)
struct RoomTranscoderTests {
    static func temporaryFolder() throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("transcode-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    static func transcode(_ name: String, package: URL? = nil, roomPlan: URL? = nil, into folder: URL,
                          metadata: TranscodeMetadata = TranscodeMetadata(roomId: "room-1", versionId: "v-1", durationSeconds: 420))
        throws -> TranscodeResult {
        try RoomTranscoder.transcode(
            packageAt: package ?? URL(fileURLWithPath: ScanFixtures.package(name)),
            roomPlanJSON: roomPlan ?? ScanFixtures.directory.appendingPathComponent(name + ".roomplan.json"),
            metadata: metadata, into: folder)
    }

    static func failure(_ body: () throws -> TranscodeResult) -> RoomScanError? {
        do {
            _ = try body()
            return nil
        } catch {
            return error as? RoomScanError ?? RoomScanError(RoomScanError.Code(rawValue: "not_a_room_scan_error"), "\(error)")
        }
    }

    static let checker: String? = [Witness.root.appendingPathComponent(".venv/bin/check-jsonschema").path,
                                   "/usr/local/bin/check-jsonschema", "/usr/bin/check-jsonschema", "/root/.pyenv/shims/check-jsonschema"]
        .first { FileManager.default.isExecutableFile(atPath: $0) }

    @Test("a scan becomes one GLB per layer, two thumbnails and a manifest written last with keys under rooms/{room}/{version}/",
          arguments: ["roomscan", "roomscan_usdc"])
    func transcodesScan(name: String) throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let redaction = Redaction(textureRef: "textures/fabric.jpg", kind: .face,
                                  region: RedactionRegion(x: 0.1, y: 0.2, width: 0.3, height: 0.3), method: "gaussianBlur18")
        let package = URL(fileURLWithPath: ScanFixtures.package(name))
        let sha = Digest.hexSHA256(of: try Data(contentsOf: package))
        let result = try Self.transcode(name, into: folder, metadata: TranscodeMetadata(
            roomId: "room-1", versionId: "v-1", durationSeconds: 420, expectedSHA256: sha.uppercased(), redactions: [redaction]))
        #expect(result.files.last?.key == "rooms/room-1/v-1/layer_manifest.json")
        #expect(result.files.contains { $0.key == "rooms/room-1/v-1/layers/walls.glb" })
        #expect(result.files.contains { $0.key == "rooms/room-1/v-1/thumbnail.webp" })
        for file in result.files { #expect(FileManager.default.fileExists(atPath: file.url.path), "\(file.key)") }
        #expect(result.grade.grade == .a)
        let manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("layer_manifest.json"))) as? [String: Any])
        #expect((manifest["package"] as? [String: Any])?["sha256"] as? String == sha)
        let layers = manifest["layers"] as? [[String: Any]] ?? []
        #expect(layers.map { $0["name"] as? String ?? "" } == ["walls", "doors", "windows", "openings", "floors", "storage",
                                                               "refrigerator", "stove", "bed", "sink", "table", "sofa", "chair",
                                                               "television"])
        let walls = try #require(layers.first)
        #expect(walls["triangleCount"] as? Int == 48 && walls["sourcePointCount"] as? Int == 32 && walls["glbVertexCount"] as? Int == 96)
        let redactions = manifest["redactions"] as? [[String: Any]] ?? []
        #expect(redactions.first?["texture"] as? String == "textures/fabric.jpg" && redactions.first?["inPackage"] as? Bool == true)
        // How many regions, never where: anyone who sees the public room can read the manifest.
        #expect(redactions.first?["count"] as? Int == 1 && redactions.first?["regions"] == nil)
        let text = String(decoding: try Data(contentsOf: folder.appendingPathComponent("layer_manifest.json")), as: UTF8.self)
        #expect(!text.contains("gaussianBlur18") && !text.contains("\"width\":0.3"), "no region or method of a redaction")
        let grade = manifest["grade"] as? [String: Any] ?? [:]
        #expect(grade["grade"] as? String == "A")
        #expect((grade["dimensions"] as? [[String: Any]])?.count == 4)
    }

    @Test("the manifest validates against docs/layer_manifest.schema.json (check-jsonschema), skipped duration and redaction counts included",
          .enabled(if: RoomTranscoderTests.checker != nil))
    func manifestSchema() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let redaction = Redaction(textureRef: "textures/wall.png", kind: .manual,
                                  region: RedactionRegion(x: 0.5, y: 0.5, width: 0.1, height: 0.1), method: "manual_blur")
        _ = try Self.transcode("roomscan_open", into: folder, metadata: TranscodeMetadata(roomId: "r", versionId: "v",
                                                                                          redactions: [redaction, redaction]))
        let schema = Witness.root.appendingPathComponent("docs/layer_manifest.schema.json").path
        let result = try Witness.run(try #require(Self.checker), ["--schemafile", schema, folder.appendingPathComponent("layer_manifest.json").path])
        #expect(result.status == 0, "\(result.output)")
        // A manifest missing a required key fails: the check can fail.
        var broken = try JSONSerialization.jsonObject(with: Data(contentsOf: folder.appendingPathComponent("layer_manifest.json"))) as? [String: Any] ?? [:]
        broken["grade"] = nil
        let brokenFile = folder.appendingPathComponent("broken.json")
        try JSONSerialization.data(withJSONObject: broken).write(to: brokenFile)
        #expect(try Witness.run(try #require(Self.checker), ["--schemafile", schema, brokenFile.path]).status != 0)
    }

    @Test("the open three-wall scan grades C and its duration dimension says it was skipped")
    func openScanGrade() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let result = try Self.transcode("roomscan_open", into: folder, metadata: TranscodeMetadata(roomId: "r", versionId: "v"))
        #expect(result.grade.grade == .c)
        #expect(result.grade.dimensions.last?.grade == nil)
    }

    @Test("bad input fails with a code and a reason: checksum, ids, malformed packages, a zip bomb, absurd counts")
    func failures() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let sha = Self.failure { try Self.transcode("roomscan", into: folder, metadata: TranscodeMetadata(
            roomId: "r", versionId: "v", expectedSHA256: String(repeating: "0", count: 64))) }
        #expect(sha?.code == .checksumMismatch)
        #expect(Self.failure { try Self.transcode("roomscan", into: folder, metadata: TranscodeMetadata(roomId: "../x", versionId: "v")) }?
            .code == .metadataInvalid)
        for broken in ["zip_bomb", "compressed_root", "truncated", "wrong_magic", "bad_crate"] {
            let error = Self.failure {
                try Self.transcode("roomscan", package: ScanFixtures.directory.appendingPathComponent(broken + ".usdz"), into: folder)
            }
            #expect(error?.code == .packageInvalid, "\(broken): \(String(describing: error))")
            #expect(error?.reason.hasPrefix("source.usdz") == true, "\(broken)")
        }
        let huge = folder.appendingPathComponent("huge.json")
        try ScanFixtures.edited("roomscan") { $0["walls"] = Array(repeating: [String: Any](), count: 6_000) }.write(to: huge)
        #expect(Self.failure { try Self.transcode("roomscan", roomPlan: huge, into: folder) }?.code == .roomPlanTooLarge)
        #expect(Self.failure { try Self.transcode("roomscan", roomPlan: folder.appendingPathComponent("missing.json"), into: folder) }?
            .code == .roomPlanMalformed)
    }

    @Test("mutated packages (byte flips, truncations) end in a result or a RoomScanError, never a crash")
    func mutations() throws {
        let folder = try Self.temporaryFolder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = [UInt8](try Data(contentsOf: URL(fileURLWithPath: ScanFixtures.package("roomscan_usdc"))))
        var generator = SplitMix(seed: 17)
        var outcomes: [String: Int] = [:]
        for round in 0..<60 {
            var bytes = original
            if round % 10 == 9 {
                bytes.removeLast(Int(generator.next() % UInt64(bytes.count)))
            } else {
                for _ in 0..<(1 + round % 8) {
                    bytes[Int(generator.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: generator.next())
                }
            }
            let package = folder.appendingPathComponent("mutant.usdz")
            try Data(bytes).write(to: package)
            let output = folder.appendingPathComponent("out-\(round)")
            do {
                _ = try Self.transcode("roomscan_usdc", package: package, into: output)
                outcomes["ok", default: 0] += 1
            } catch let error as RoomScanError {
                outcomes[error.code.rawValue, default: 0] += 1
            }
        }
        #expect(outcomes.values.reduce(0, +) == 60, "\(outcomes)")
        #expect(outcomes["package_invalid", default: 0] > 0, "\(outcomes)")
    }
}

/// A small deterministic generator for the mutation rounds.
struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension Digest {
    static func hexSHA256(of data: Data) -> String { hex(sha256([UInt8](data))) }
}

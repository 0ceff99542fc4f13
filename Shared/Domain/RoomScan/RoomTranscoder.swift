import Contracts
import Foundation
import Hashing
import USD

/// What the transcoder needs besides the two files: where the outputs go in the store,
/// what the upload declared, what the app redacted.
public struct TranscodeMetadata: Sendable {
    public var roomId: String
    public var versionId: String
    /// `scan.durationSeconds` of upload-complete, when the app sent it.
    public var durationSeconds: Double?
    /// The sha256 (hex) upload-complete declared for `source.usdz`, checked when present.
    public var expectedSHA256: String?
    public var redactions: [Redaction]

    public init(roomId: String, versionId: String, durationSeconds: Double? = nil, expectedSHA256: String? = nil,
                redactions: [Redaction] = []) {
        self.roomId = roomId
        self.versionId = versionId
        self.durationSeconds = durationSeconds
        self.expectedSHA256 = expectedSHA256
        self.redactions = redactions
    }

    /// `rooms/{roomId}/{versionId}/` — the store prefix of every output.
    public var keyPrefix: String { "rooms/\(roomId)/\(versionId)/" }
}

/// The files written and what they hold.
public struct TranscodeResult: Sendable {
    public let manifest: LayerManifest
    /// Output files by store key (`rooms/{roomId}/{versionId}/layers/walls.glb`…), the
    /// manifest last.
    public let files: [(key: String, url: URL)]
    public var grade: QualityGrade { manifest.grade }
}

/// The compute core of the transcode worker: a RoomPlan package and its CapturedRoom JSON
/// in, one GLB per layer, two plan thumbnails and `layer_manifest.json` out.
public enum RoomTranscoder {
    /// Reads, validates, layers and writes; the manifest is written last, so a directory
    /// with a manifest has every file it names. Throws `RoomScanError` for anything the
    /// input is to blame for (never traps on input).
    ///
    /// `onStage` is called as each stage starts: `parsing`, `layering`, `exporting`, `thumbnail`.
    public static func transcode(packageAt package: URL, roomPlanJSON roomPlan: URL, metadata: TranscodeMetadata,
                                 into output: URL, onStage: (String) -> Void = { _ in }) throws -> TranscodeResult {
        for (name, value) in [("roomId", metadata.roomId), ("versionId", metadata.versionId)] {
            guard !value.isEmpty, value.count <= 128,
                  value.unicodeScalars.allSatisfy({ $0.isASCII && (CharacterSet.alphanumerics.contains($0) || $0 == "-" || $0 == "_") })
            else { throw RoomScanError(.metadataInvalid, "\(name) \"\(value.prefix(64))\" is not a plain identifier") }
        }
        let roomPlanData: Data
        do {
            let size = (try FileManager.default.attributesOfItem(atPath: roomPlan.path)[.size] as? NSNumber)?.intValue ?? 0
            guard size <= CapturedRoom.maximumBytes else {
                throw RoomScanError(.roomPlanTooLarge, "roomplan.json is \(size) bytes, more than \(CapturedRoom.maximumBytes)")
            }
            roomPlanData = try Data(contentsOf: roomPlan)
        } catch let error as RoomScanError {
            throw error
        } catch {
            throw RoomScanError(.roomPlanMalformed, "roomplan.json cannot be read")
        }
        let room = try CapturedRoom(json: roomPlanData)

        let usdz = try readingPackage { try USDZPackage(contentsOf: package.path) }
        let sha256 = Digest.hex(Digest.sha256(usdz.bytes))
        if let expected = metadata.expectedSHA256, expected.lowercased() != sha256 {
            throw RoomScanError(.checksumMismatch, "source.usdz has sha256 \(sha256), the upload declared \(expected.prefix(64))")
        }
        onStage("parsing")
        let stage = try readingPackage { try USDStage(package: usdz) }
        if let error = stage.findings.first(where: { $0.severity == .error }) {
            throw RoomScanError(.packageInvalid, "source.usdz: \(error.message) (\(error.code))")
        }

        let traversal = stage.traverse()
        let geometry = WorldGeometry()
        let boxes = Dictionary(zip(traversal.map(\.path), geometry.traversalBounds(traversal)), uniquingKeysWith: { a, _ in a })
        onStage("layering")
        let layers = RoomLayers(traversal: traversal, room: room)
        guard !layers.layers.isEmpty else { throw RoomScanError(.packageInvalid, "source.usdz has no mesh to layer") }
        let grade = QualityGrade(room: room, durationSeconds: metadata.durationSeconds)

        do {
            try FileManager.default.createDirectory(at: output.appendingPathComponent("layers"), withIntermediateDirectories: true)
        } catch {
            throw RoomScanError(.outputFailed, "cannot create \(output.path)/layers")
        }
        var files: [(key: String, url: URL)] = []
        func write(_ bytes: [UInt8], _ relative: String) throws {
            let url = output.appendingPathComponent(relative)
            do { try Data(bytes).write(to: url, options: .atomic) } catch {
                throw RoomScanError(.outputFailed, "cannot write \(relative)")
            }
            files.append((metadata.keyPrefix + relative, url))
        }

        onStage("exporting")
        var entries: [LayerManifest.Layer] = []
        for layer in layers.layers {
            let prims = layer.meshPaths.compactMap { stage.prim(at: $0) }
            let (bytes, summary) = try GLBWriter.glb(of: prims, in: stage, geometry: geometry)
            let relative = "layers/\(layer.layer).glb"
            try write(bytes, relative)
            var box = BoundingBox.empty
            for path in layer.meshPaths { if let b = boxes[path] ?? nil { box.formUnion(b) } }
            entries.append(LayerManifest.Layer(name: layer.layer.rawValue, glbKey: metadata.keyPrefix + relative, glbBytes: bytes.count,
                                               primPaths: layer.meshPaths, elementPaths: layer.elementPaths,
                                               worldBounds: box.isEmpty ? nil : box, summary: summary))
        }
        onStage("thumbnail")
        let plan = PlanThumbnail.render(room)
        let png = try plan.png(), webp = try plan.webp()
        try write(png, "thumbnail.png")
        try write(webp, "thumbnail.webp")

        var findings = stage.findings.map { LayerManifest.Finding(code: $0.code.rawValue, severity: $0.severity.rawValue, message: $0.message) }
        findings += geometry.transformProblems.prefix(20).map { LayerManifest.Finding(code: "unsupported_construct", severity: "warning", message: $0) }
        findings += layers.mismatches.map { LayerManifest.Finding(code: "element_count_mismatch", severity: "warning", message: $0.description) }
        let packageEntries = Set(usdz.entries.map(\.path))
        let redactions = Dictionary(grouping: metadata.redactions, by: \.textureRef).sorted { $0.key < $1.key }.map {
            LayerManifest.TextureRedactions(texture: $0.key, inPackage: packageEntries.contains($0.key), redactions: $0.value)
        }
        let manifest = LayerManifest(
            roomId: metadata.roomId, versionId: metadata.versionId, packageSHA256: sha256, packageBytes: usdz.bytes.count,
            roomPlanSHA256: Digest.hex(Digest.sha256(roomPlanData)), roomPlanBytes: roomPlanData.count,
            upAxis: stage.upAxis, metersPerUnit: stage.metersPerUnit, layers: entries, grade: grade,
            thumbnails: [("png", metadata.keyPrefix + "thumbnail.png", png.count), ("webp", metadata.keyPrefix + "thumbnail.webp", webp.count)],
            redactions: redactions, findings: findings)
        try write(manifest.json(), "layer_manifest.json")
        return TranscodeResult(manifest: manifest, files: files)
    }

    /// Runs a USD read, turning its failure into `package_invalid` with the reader's reason.
    private static func readingPackage<T>(_ read: () throws -> T) throws -> T {
        do {
            return try read()
        } catch let error as USDError {
            throw RoomScanError(.packageInvalid, "source.usdz: \(error.message) (\(error.code))")
        } catch {
            throw RoomScanError(.packageInvalid, "source.usdz cannot be read")
        }
    }
}

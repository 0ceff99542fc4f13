import Foundation
import Testing
import USD
@testable import RoomScan

@Suite("GLB layers", .serialized)
struct GLBWriterTests {
    /// usd-core's triangle count and world box per layer, from the fixture's expectations.
    static func usdCoreLayers(_ name: String, _ layers: RoomLayers) throws -> [RoomLayer: (triangles: Int, box: [Double])] {
        let data = try Data(contentsOf: ScanFixtures.directory.appendingPathComponent(name + ".expected.json"))
        let prims = (try JSONSerialization.jsonObject(with: data) as? [String: Any])?["prims"] as? [[String: Any]] ?? []
        let byPath = Dictionary(prims.map { ($0["path"] as? String ?? "", $0) }, uniquingKeysWith: { a, _ in a })
        var result: [RoomLayer: (triangles: Int, box: [Double])] = [:]
        for layer in layers.layers {
            var triangles = 0
            var box = [Double.infinity, .infinity, .infinity, -.infinity, -.infinity, -.infinity]
            for path in layer.meshPaths {
                let prim = byPath[path] ?? [:]
                triangles += prim["triangleCount"] as? Int ?? 0
                let bounds = prim["worldBounds"] as? [String: [Double]] ?? [:]
                for k in 0..<3 {
                    box[k] = min(box[k], bounds["min"]?[k] ?? .infinity)
                    box[k + 3] = max(box[k + 3], bounds["max"]?[k] ?? -.infinity)
                }
            }
            result[layer.layer] = (triangles, box)
        }
        return result
    }

    static func writeLayers(_ name: String, into folder: URL) throws -> [(RoomLayer, URL, GLBWriter.Summary)] {
        let stage = try USDStage(contentsOf: ScanFixtures.package(name))
        let layers = RoomLayers(stage: stage, room: try ScanFixtures.room(name))
        let geometry = WorldGeometry()
        return try layers.layers.map { layer in
            let prims = layer.meshPaths.compactMap { stage.prim(at: $0) }
            let (bytes, summary) = try GLBWriter.glb(of: prims, in: stage, geometry: geometry)
            let file = folder.appendingPathComponent("\(layer.layer).glb")
            try Data(bytes).write(to: file)
            return (layer.layer, file, summary)
        }
    }

    @Test("each layer's GLB has usd-core's triangle count and world box; face-varying corners split vertices",
          arguments: ["roomscan", "roomscan_usdc"])
    func countsAndBoxes(name: String) throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("glb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stage = try USDStage(contentsOf: ScanFixtures.package(name))
        let expected = try Self.usdCoreLayers(name, RoomLayers(stage: stage, room: try ScanFixtures.room(name)))
        let written = try Self.writeLayers(name, into: folder)
        #expect(written.count == expected.count)
        for (layer, file, summary) in written {
            let want = try #require(expected[layer])
            #expect(summary.triangleCount == want.triangles, "\(layer)")
            let ours = [summary.bounds.min.x, summary.bounds.min.y, summary.bounds.min.z,
                        summary.bounds.max.x, summary.bounds.max.y, summary.bounds.max.z]
            #expect(zip(ours, want.box).allSatisfy { abs($0 - $1) <= 1e-4 }, "\(layer): \(ours) vs \(want.box)")
            #expect(summary.vertexCount == summary.meshCount * 24 && summary.sourcePointCount == summary.meshCount * 8)
            let bytes = try [UInt8](Data(contentsOf: file))
            #expect(bytes.count % 4 == 0 && Array(bytes[0..<4]) == Array("glTF".utf8))
        }
        let floors = try #require(written.first { $0.0 == .floors })
        #expect(floors.2.textures == ["textures/floor.png"])
        let sofa = try #require(written.first { $0.0.rawValue == "sofa" })
        #expect(sofa.2.textures == ["textures/fabric.jpg"])
    }

    @Test("gltfpack validates every layer; trimesh and pygltflib read usd-core's triangles and boxes (1e-4)",
          .enabled(if: Witness.gltfpack != nil && Witness.hasPython(["trimesh", "pygltflib", "numpy"])))
    func independentReaders() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("glb-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let stage = try USDStage(contentsOf: ScanFixtures.package("roomscan"))
        let expected = try Self.usdCoreLayers("roomscan", RoomLayers(stage: stage, room: try ScanFixtures.room("roomscan")))
        var items: [[String: Any]] = []
        for (layer, file, summary) in try Self.writeLayers("roomscan", into: folder) {
            let packed = folder.appendingPathComponent("\(layer).packed.glb")
            let result = try Witness.run(try #require(Witness.gltfpack), ["-i", file.path, "-o", packed.path])
            #expect(result.status == 0, "gltfpack \(layer): \(result.output)")
            let want = try #require(expected[layer])
            items.append(["file": file.path, "triangles": want.triangles, "min": Array(want.box[0..<3]),
                          "max": Array(want.box[3..<6]), "images": summary.textures.count])
        }
        let list = folder.appendingPathComponent("expect.json")
        try JSONSerialization.data(withJSONObject: items).write(to: list)
        let result = try Witness.run(Witness.python, [Witness.scripts.appendingPathComponent("check_glb.py").path, list.path])
        #expect(result.status == 0, "\(result.output)")
        let lines = result.output.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        #expect(lines.count == items.count, "\(result.output)")
        for line in lines { #expect(line["ok"] as? Bool == true, "\(line)") }
    }

    @Test("hostile meshes are refused or cleaned, never a crash: indices past the points, NaN and huge counts")
    func hostileMesh() throws {
        let text = """
        #usda 1.0
        def Mesh "Bad"
        {
            int[] faceVertexCounts = [3, 4, -2]
            int[] faceVertexIndices = [0, 1, 2, 0, 1, 9, 2]
            point3f[] points = [(0, 0, 0), (1, 0, 0), (1, 1, 0)]
        }
        def Mesh "Huge"
        {
            int[] faceVertexCounts = [2147483647]
            int[] faceVertexIndices = [0, 1, 2]
            point3f[] points = [(0, 0, 0), (1, 0, 0), (1, 1, 0)]
        }
        """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("bad-\(UUID().uuidString).usda")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let stage = try USDStage(contentsOf: file.path)
        let bad = try #require(stage.prim(at: "/Bad"))
        let (bytes, summary) = try GLBWriter.glb(of: [bad], in: stage, geometry: WorldGeometry())
        #expect(summary.triangleCount == 1 && summary.skippedFaces == 1)
        #expect(bytes.count % 4 == 0)
        let huge = try #require(stage.prim(at: "/Huge"))
        #expect(throws: RoomScanError.self) { try GLBWriter.glb(of: [huge], in: stage, geometry: WorldGeometry()) }
    }
}

@Suite("GLB stage conventions")
struct GLBStageConventionTests {
    @Test("a Z-up centimetre stage becomes glTF's Y-up metres: stage (x, y, z) becomes (x, z, −y) × metersPerUnit")
    func zUpCentimetres() throws {
        let text = """
        #usda 1.0
        (
            upAxis = "Z"
            metersPerUnit = 0.01
        )
        def Mesh "Box"
        {
            double3 xformOp:translate = (10, 20, 30)
            uniform token[] xformOpOrder = ["xformOp:translate"]
            int[] faceVertexCounts = [4, 4]
            int[] faceVertexIndices = [0, 1, 2, 3, 4, 5, 6, 7]
            point3f[] points = [(0, 0, 0), (1, 0, 0), (1, 2, 0), (0, 2, 0), (0, 0, 3), (1, 0, 3), (1, 2, 3), (0, 2, 3)]
        }
        """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("zup-\(UUID().uuidString).usda")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let stage = try USDStage(contentsOf: file.path)
        #expect(stage.upAxis == "Z" && stage.metersPerUnit == 0.01)
        let (_, summary) = try GLBWriter.glb(of: [try #require(stage.prim(at: "/Box"))], in: stage, geometry: WorldGeometry())
        let want = [0.10, 0.30, -0.22, 0.11, 0.33, -0.20]
        let got = [summary.bounds.min.x, summary.bounds.min.y, summary.bounds.min.z,
                   summary.bounds.max.x, summary.bounds.max.y, summary.bounds.max.z]
        #expect(zip(got, want).allSatisfy { abs($0 - $1) <= 1e-6 }, "\(got) vs \(want)")
        #expect(summary.triangleCount == 4 && summary.vertexCount == 8)
    }
}

@Suite("GLB edge cases")
struct GLBEdgeCaseTests {
    @Test("a layer whose every face is dropped is an empty scene with no empty glTF arrays")
    func emptyLayer() throws {
        let text = """
        #usda 1.0
        def Mesh "Broken"
        {
            int[] faceVertexCounts = [3]
            int[] faceVertexIndices = [0, 1, 7]
            point3f[] points = [(0, 0, 0), (1, 0, 0), (1, 1, 0)]
        }
        """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("empty-\(UUID().uuidString).usda")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let stage = try USDStage(contentsOf: file.path)
        let (bytes, summary) = try GLBWriter.glb(of: [try #require(stage.prim(at: "/Broken"))], in: stage, geometry: WorldGeometry())
        #expect(summary.meshCount == 0 && summary.skippedFaces == 1)
        let length = Int(bytes[12]) | Int(bytes[13]) << 8 | Int(bytes[14]) << 16 | Int(bytes[15]) << 24
        #expect(bytes.count == 20 + length)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(bytes[20..<(20 + length)])) as? [String: Any])
        #expect(json["meshes"] == nil && json["nodes"] == nil && json["buffers"] == nil)
        if let gltfpack = Witness.gltfpack {
            let glb = file.deletingPathExtension().appendingPathExtension("glb")
            try Data(bytes).write(to: glb)
            defer { try? FileManager.default.removeItem(at: glb) }
            let out = FileManager.default.temporaryDirectory.appendingPathComponent("empty-out-\(UUID().uuidString).glb")
            defer { try? FileManager.default.removeItem(at: out) }
            let result = try Witness.run(gltfpack, ["-i", glb.path, "-o", out.path])
            #expect(result.status == 0, "\(result.output)")
        }
    }
}

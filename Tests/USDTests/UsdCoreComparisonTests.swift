import Foundation
import Testing
@testable import USD

@Suite("Reading packages agrees with Pixar's usd-core")
struct UsdCoreComparisonTests {
    @Test("prim paths, types, world bounds, counts and textures match usd-core", arguments: Fixtures.wellFormed)
    func matchesUsdCore(name: String) throws {
        let expected = try Fixtures.expected(name)
        let report = USDInspectCommand.inspect(path: Fixtures.path(name))
        #expect(!report.hasErrors, "\(report.findings)")
        #expect(report.upAxis == expected["upAxis"] as? String)
        #expect(close(report.metersPerUnit, expected["metersPerUnit"] as? Double ?? .nan))
        let prims = expected["prims"] as? [[String: Any]] ?? []
        #expect(report.prims.map(\.path) == prims.map { $0["path"] as? String ?? "" })
        let byPath = Dictionary(report.prims.map { ($0.path, $0) }, uniquingKeysWith: { a, _ in a })
        for want in prims {
            let path = want["path"] as? String ?? ""
            guard let got = byPath[path] else { continue }
            #expect(got.type == want["type"] as? String, "\(path)")
            #expect(got.vertexCount == want["vertexCount"] as? Int, "\(path)")
            #expect(got.triangleCount == want["triangleCount"] as? Int, "\(path)")
            if let textures = want["textures"] as? [String] {
                #expect(got.textures == textures, "\(path)")
            }
            if let custom = want["customData"] as? [String: String] {
                for (key, value) in custom { #expect(got.customData[key]?.asString == value, "\(path) \(key)") }
            }
            if let bounds = want["worldBounds"] as? [String: [Double]], let min = bounds["min"], let max = bounds["max"] {
                guard let box = got.worldBounds else {
                    Issue.record("\(path): no bounds, usd-core has \(bounds)")
                    continue
                }
                let ours = [box.min.x, box.min.y, box.min.z, box.max.x, box.max.y, box.max.z]
                let theirs = min + max
                #expect(zip(ours, theirs).allSatisfy { close($0, $1) }, "\(path): \(ours) vs usd-core \(theirs)")
            } else {
                #expect(got.worldBounds == nil, "\(path): usd-core has no bounds")
            }
        }
    }

    @Test("the JSON output is one object with the contract's fields")
    func jsonContract() throws {
        let report = USDInspectCommand.inspect(path: Fixtures.path("roomplan"))
        let object = try JSONSerialization.jsonObject(with: Data(report.json.utf8)) as? [String: Any]
        let prims = try #require(object?["prims"] as? [[String: Any]])
        #expect(object?["upAxis"] as? String == "Y")
        #expect(object?["findings"] is [Any])
        let wall = try #require(prims.first { $0["path"] as? String == "/Room/Arch_grp/Wall_0_grp/Wall0" })
        #expect((wall["customData"] as? [String: Any])?["Category"] as? String == "Wall")
        let mesh = try #require(prims.first { $0["path"] as? String == "/Room/Arch_grp/Wall_0_grp/Wall0/Wall0_mesh" })
        let bounds = try #require(mesh["worldBounds"] as? [String: [Double]])
        #expect(bounds["min"]?.count == 3 && bounds["max"]?.count == 3)
        #expect(mesh["vertexCount"] as? Int == 20)
        #expect(mesh["triangleCount"] as? Int == 24)
        #expect(mesh["textures"] is [Any])
    }
}

@Suite("Crate layers")
struct CrateLayerTests {
    @Test("a usd-core 26 crate is version 0.8.0 and its big arrays are compressed")
    func compressedArrays() throws {
        let package = try USDZPackage(contentsOf: Fixtures.path("basic_usdc"))
        let root = try #require(package.entry(package.rootLayerPath))
        let file = try CrateFile(bytes: package.bytes, range: root.dataOffset..<(root.dataOffset + root.size), identifier: root.path)
        #expect(file.version == CrateFile.Version(major: 0, minor: 8, patch: 0))
        #expect(file.fieldReps.contains { $0 & (1 << 61) != 0 && $0 & (1 << 63) != 0 })
        let stage = try USDStage(package: package)
        let big = try #require(stage.prim(at: "/World/Big"))
        #expect(big.vertexCount == 336)
        #expect(big.attributes["faceVertexIndices"]?.asNumbers?.count == 1_200)
    }

    @Test("payloads authored in a crate root are loaded like references")
    func payloadInCrate() throws {
        let stage = try USDStage(contentsOf: Fixtures.path("roomplan_usdc"))
        let floor = try #require(stage.prim(at: "/Room/Floor_grp/Floor0"))
        #expect(floor.customData["Category"]?.asString == "Floor")
        #expect(floor.children.contains { $0.typeName == "Mesh" })
    }
}

@Suite("The inspect command")
struct InspectCommandTests {
    @Test("usage errors exit with 2 and unreadable packages with 1")
    func exitCodes() {
        #expect(USDInspectCommand.run(arguments: ["frobnicate"]) == 2)
        #expect(USDInspectCommand.run(arguments: ["inspect"]) == 2)
        let report = USDInspectCommand.inspect(path: "/nonexistent/file.usdz")
        #expect(report.hasErrors)
        #expect(report.findings.contains { $0.code.rawValue == "io_failure" })
    }
}

@Suite("World geometry")
struct WorldGeometryTests {
    @Test("worldBounds of one prim is what the one-pass traversal gives it", arguments: Fixtures.wellFormed)
    func worldBoundsMatchesTraversal(name: String) throws {
        let stage = try USDStage(contentsOf: Fixtures.path(name))
        let traversal = stage.traverse()
        let expected = WorldGeometry().traversalBounds(traversal)
        for (prim, want) in zip(traversal, expected).reversed() { // deepest first: no help from caches
            #expect(WorldGeometry().worldBounds(prim) == want, "\(prim.path)")
        }
    }

    @Test("a prim inside a rotated component is bounded in the component's space by both")
    func nestedInComponent() throws {
        let text = """
        #usda 1.0
        def Xform "World"
        {
            def Xform "Component" (
                kind = "component"
            )
            {
                double xformOp:rotateY = 45
                uniform token[] xformOpOrder = ["xformOp:rotateY"]
                def Xform "Inner"
                {
                    def Mesh "A"
                    {
                        float3[] extent = [(0, 0, 0), (1, 1, 1)]
                    }
                    def Mesh "B"
                    {
                        float3[] extent = [(0, 0, 0), (1, 1, 1)]
                        double3 xformOp:translate = (2, 0, 2)
                        uniform token[] xformOpOrder = ["xformOp:translate"]
                    }
                }
            }
        }
        """
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("nested-\(UUID().uuidString).usda")
        try Data(text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let stage = try USDStage(contentsOf: file.path)
        let traversal = stage.traverse()
        let expected = WorldGeometry().traversalBounds(traversal)
        let inner = try #require(traversal.firstIndex { $0.path == "/World/Component/Inner" })
        let box = try #require(WorldGeometry().worldBounds(traversal[inner]))
        #expect(box == expected[inner])
        // Accumulated in world space, Inner's box would be the union of its children's boxes;
        // in the component's space it has a corner (3, 0, 0) neither child has.
        var union = BoundingBox.empty
        for child in traversal[inner].children { union.formUnion(try #require(WorldGeometry().worldBounds(child))) }
        #expect(box.min.z < union.min.z - 1, "\(box) \(union)")
    }
}

import Contracts
import Foundation
import USD

/// Writes one layer's meshes as a glTF 2.0 binary: world-space positions (each prim's world
/// transform applied), normals and UVs where the source has them, polygons fan-triangulated,
/// materials with their textures embedded as image buffer views.
///
/// Every face corner becomes its own vertex, so vertex, face-varying, uniform and constant
/// primvars need no special case (the GLB's vertex count is the source's corner count).
/// A primvar's interpolation is told by its length: points → vertex, corners → faceVarying,
/// faces → uniform, 1 → constant; any other length is ignored.
public struct GLBWriter {
    /// What one written layer holds.
    public struct Summary: Sendable, Equatable {
        public var meshCount = 0
        public var triangleCount = 0
        /// Points authored in the source meshes.
        public var sourcePointCount = 0
        /// Vertices written to the GLB.
        public var vertexCount = 0
        /// World box of the written positions.
        public var bounds = BoundingBox.empty
        /// Package entry paths of the embedded textures.
        public var textures: [String] = []
        /// Faces dropped because they index points that do not exist.
        public var skippedFaces = 0
    }

    private var binary: [UInt8] = []
    private var bufferViews: [[String: Any]] = []
    private var accessors: [[String: Any]] = []
    private var meshes: [[String: Any]] = []
    private var materials: [[String: Any]] = []
    private var images: [[String: Any]] = []
    private var imageIndex: [String: Int] = [:]
    private var materialIndex: [String: Int] = [:]
    public private(set) var summary = Summary()

    /// Most corners one layer may hold (a bound on memory for hostile counts).
    public static let maximumCorners = 20_000_000

    public init() {}

    /// The GLB of `prims` (Mesh prims of `stage`; others are ignored).
    public static func glb(of prims: [USDPrim], in stage: USDStage, geometry: WorldGeometry) throws -> (bytes: [UInt8], summary: Summary) {
        var writer = GLBWriter()
        let correction = stageToGLTF(upAxis: stage.upAxis, metersPerUnit: stage.metersPerUnit)
        for prim in prims where prim.typeName == "Mesh" { try writer.add(prim, in: stage, geometry: geometry, correction: correction) }
        return (try writer.finish(), writer.summary)
    }

    /// From stage space to glTF's Y-up metres: scale by `metersPerUnit`, and a Z-up stage
    /// turned −90° about x (stage +z becomes glTF +y).
    public static func stageToGLTF(upAxis: String, metersPerUnit: Double) -> Matrix4 {
        let scale = metersPerUnit.isFinite && metersPerUnit > 0 ? metersPerUnit : 1
        let scaled = Matrix4(diagonal: scale, scale, scale)
        return upAxis == "Z" ? scaled * Matrix4.rotation(axis: 0, degrees: -90) : scaled
    }

    /// Adds one mesh prim; `correction` is applied after its world transform.
    public mutating func add(_ prim: USDPrim, in stage: USDStage, geometry: WorldGeometry, correction: Matrix4 = .identity) throws {
        guard let points = prim.attribute("points")?.asNumbers, let counts = prim.attribute("faceVertexCounts")?.asNumbers,
              let indices = prim.attribute("faceVertexIndices")?.asNumbers else { return }
        let pointCount = points.count / 3
        let corners = counts.reduce(0) { Swift.min($0 + Swift.max(0, GLBWriter.integer($1)), Int(Int32.max)) }
        guard corners <= indices.count, summary.vertexCount + corners <= GLBWriter.maximumCorners else {
            throw RoomScanError(.geometryInvalid, "\(prim.path): \(corners) face corners for \(indices.count) indices")
        }
        let world = geometry.worldTransform(prim) * correction
        let normalMatrix = world.inverse ?? .identity
        let flip = GLBWriter.determinant3(world) < 0
        let normals = prim.attribute("normals")?.asNumbers ?? prim.attribute("primvars:normals")?.asNumbers
        var uvs = prim.attribute("primvars:st")?.asNumbers
        if let uvIndices = prim.attribute("primvars:st:indices")?.asNumbers, let values = uvs {
            var expanded: [Double] = []
            expanded.reserveCapacity(2 * uvIndices.count)
            for index in uvIndices {
                let i = GLBWriter.integer(index)
                let valid = i >= 0 && 2 * i + 1 < values.count
                expanded.append(valid ? values[2 * i] : 0)
                expanded.append(valid ? values[2 * i + 1] : 0)
            }
            uvs = expanded
        }
        func interpolation(_ values: [Double]?, width: Int) -> ((Int, Int, Int) -> Int)? {
            guard let values else { return nil }
            switch values.count / width {
            case _ where values.count % width != 0: return nil
            case pointCount: return { point, _, _ in point }
            case corners: return { _, corner, _ in corner }
            case counts.count: return { _, _, face in face }
            case 1: return { _, _, _ in 0 }
            default: return nil
            }
        }
        let normalAt = interpolation(normals, width: 3)
        let uvAt = interpolation(uvs, width: 2)
        // Appends element by element into reserved arrays: no temporary array per corner or face.
        var positions: [Float] = [], outNormals: [Float] = [], outUVs: [Float] = [], triangles: [UInt32] = []
        positions.reserveCapacity(corners * 3)
        if normalAt != nil { outNormals.reserveCapacity(corners * 3) }
        if uvAt != nil { outUVs.reserveCapacity(corners * 2) }
        triangles.reserveCapacity(Swift.max(0, corners - 2 * counts.count) * 3)
        var faceIndices: [Int] = []
        var box = BoundingBox.empty
        var corner = 0
        for (face, countValue) in counts.enumerated() {
            let count = GLBWriter.integer(countValue)
            guard count > 0 else { continue }
            defer { corner += count }
            faceIndices.removeAll(keepingCapacity: true)
            var valid = count >= 3
            for c in corner..<(corner + count) {
                let point = GLBWriter.integer(indices[c])
                valid = valid && point >= 0 && point < pointCount
                faceIndices.append(point)
            }
            guard valid else {
                summary.skippedFaces += count >= 3 ? 1 : 0
                continue
            }
            let base = UInt32(positions.count / 3)
            for (k, point) in faceIndices.enumerated() {
                let p = world.transform(SIMD3(points[3 * point], points[3 * point + 1], points[3 * point + 2]))
                let f = SIMD3<Float>(Float(p.x), Float(p.y), Float(p.z))
                positions.append(f.x)
                positions.append(f.y)
                positions.append(f.z)
                box.include(SIMD3(Double(f.x), Double(f.y), Double(f.z)))
                if let normalAt, let normals {
                    let i = normalAt(point, corner + k, face)
                    let n = SIMD3(normals[3 * i], normals[3 * i + 1], normals[3 * i + 2])
                    var w = SIMD3<Double>(0, 0, 0)
                    for j in 0..<3 { w[j] = n.x * normalMatrix[j, 0] + n.y * normalMatrix[j, 1] + n.z * normalMatrix[j, 2] }
                    let length = (w * w).sum().squareRoot()
                    let unit = length > 0 && length.isFinite ? w / length : SIMD3(0, 1, 0)
                    outNormals.append(Float(unit.x))
                    outNormals.append(Float(unit.y))
                    outNormals.append(Float(unit.z))
                }
                if let uvAt, let uvs {
                    let i = uvAt(point, corner + k, face)
                    outUVs.append(Float(uvs[2 * i]))
                    outUVs.append(Float(1 - uvs[2 * i + 1]))
                }
            }
            for k in 1..<(count - 1) {
                triangles.append(base)
                triangles.append(base + UInt32(flip ? k + 1 : k))
                triangles.append(base + UInt32(flip ? k : k + 1))
            }
        }
        guard !triangles.isEmpty else { return }
        var attributes: [String: Any] = [:]
        attributes["POSITION"] = appendAccessor(positions, type: "VEC3", count: positions.count / 3, bounds: box)
        if outNormals.count == positions.count { attributes["NORMAL"] = appendAccessor(outNormals, type: "VEC3", count: outNormals.count / 3) }
        if outUVs.count * 3 == positions.count * 2 { attributes["TEXCOORD_0"] = appendAccessor(outUVs, type: "VEC2", count: outUVs.count / 2) }
        var primitive: [String: Any] = ["attributes": attributes, "mode": 4,
                                        "indices": appendIndices(triangles, vertexCount: positions.count / 3)]
        let textures = MaterialTextures.textures(for: prim, in: stage)
        if let material = material(for: textures, package: stage.package) { primitive["material"] = material }
        meshes.append(["name": prim.path, "primitives": [primitive]])
        summary.meshCount += 1
        summary.triangleCount += triangles.count / 3
        summary.sourcePointCount += pointCount
        summary.vertexCount += positions.count / 3
        summary.bounds.formUnion(box)
    }

    /// The finished file: header, JSON chunk (space-padded), BIN chunk (zero-padded).
    public func finish() throws -> [UInt8] {
        // glTF arrays, when present, are never empty: a layer whose every face was dropped
        // is an empty scene.
        var json: [String: Any] = [
            "asset": ["version": "2.0", "generator": "Zhixi Backbone transcode-worker"],
            "scene": 0,
            "scenes": [meshes.isEmpty ? [:] : ["nodes": Array(0..<meshes.count)]],
        ]
        if !meshes.isEmpty {
            json["nodes"] = meshes.indices.map { ["mesh": $0, "name": meshes[$0]["name"] ?? ""] as [String: Any] }
            json["meshes"] = meshes
        }
        if !binary.isEmpty {
            json["buffers"] = [["byteLength": binary.count]]
            json["bufferViews"] = bufferViews
            json["accessors"] = accessors
        }
        if !materials.isEmpty { json["materials"] = materials }
        if !images.isEmpty {
            json["images"] = images
            json["textures"] = images.indices.map { ["source": $0, "sampler": 0] as [String: Any] }
            json["samplers"] = [["magFilter": 9729, "minFilter": 9987, "wrapS": 10497, "wrapT": 10497]]
        }
        var jsonBytes = try GLBWriter.jsonBytes(json)
        while jsonBytes.count % 4 != 0 { jsonBytes.append(0x20) }
        var bin = binary
        while bin.count % 4 != 0 { bin.append(0) }
        let total = 12 + 8 + jsonBytes.count + (bin.isEmpty ? 0 : 8 + bin.count)
        var out: [UInt8] = []
        out.reserveCapacity(total)
        func u32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { out += $0 } }
        u32(0x4654_6C67)
        u32(2)
        u32(total)
        u32(jsonBytes.count)
        u32(0x4E4F_534A)
        out += jsonBytes
        if !bin.isEmpty {
            u32(bin.count)
            u32(0x004E_4942)
            out += bin
        }
        return out
    }

    // MARK: - Buffer building

    private mutating func appendView(_ bytes: UnsafeRawBufferPointer, target: Int?) -> Int {
        while binary.count % 4 != 0 { binary.append(0) }
        var view: [String: Any] = ["buffer": 0, "byteOffset": binary.count, "byteLength": bytes.count]
        if let target { view["target"] = target }
        binary += bytes
        bufferViews.append(view)
        return bufferViews.count - 1
    }

    private mutating func appendAccessor(_ values: [Float], type: String, count: Int, bounds: BoundingBox? = nil) -> Int {
        let view = values.withUnsafeBytes { appendView($0, target: 34962) }
        var accessor: [String: Any] = ["bufferView": view, "componentType": 5126, "count": count, "type": type]
        if let bounds {
            accessor["min"] = [bounds.min.x, bounds.min.y, bounds.min.z]
            accessor["max"] = [bounds.max.x, bounds.max.y, bounds.max.z]
        }
        accessors.append(accessor)
        return accessors.count - 1
    }

    private mutating func appendIndices(_ indices: [UInt32], vertexCount: Int) -> Int {
        let view = indices.withUnsafeBytes { appendView($0, target: 34963) }
        accessors.append(["bufferView": view, "componentType": 5125, "count": indices.count, "type": "SCALAR",
                          "min": [0], "max": [Swift.max(0, vertexCount - 1)]])
        return accessors.count - 1
    }

    /// The material for a mesh's textures: the first PNG/JPEG as base colour (nil when none).
    private mutating func material(for textures: [String], package: USDZPackage) -> Int? {
        guard let path = textures.first(where: { GLBWriter.mimeType($0) != nil }),
              let entry = package.entry(path), entry.readable,
              entry.dataOffset >= 0, entry.size >= 0, entry.dataOffset + entry.size <= package.bytes.count else { return nil }
        if let known = materialIndex[path] { return known }
        let image: Int
        if let known = imageIndex[path] {
            image = known
        } else {
            let view = package.bytes[entry.dataOffset..<(entry.dataOffset + entry.size)].withUnsafeBytes { appendView($0, target: nil) }
            images.append(["bufferView": view, "mimeType": GLBWriter.mimeType(path) ?? "image/png", "name": path])
            image = images.count - 1
            imageIndex[path] = image
            summary.textures.append(path)
        }
        materials.append(["name": path, "pbrMetallicRoughness": ["baseColorTexture": ["index": image],
                                                                  "metallicFactor": 0.0, "roughnessFactor": 1.0] as [String: Any]])
        materialIndex[path] = materials.count - 1
        return materials.count - 1
    }

    /// A count or index read as a double: -1 when it is no integer in Int32's range.
    static func integer(_ value: Double) -> Int {
        value.isFinite && value >= 0 && value <= Double(Int32.max) ? Int(value) : -1
    }

    static func mimeType(_ path: String) -> String? {
        let lower = path.lowercased()
        if lower.hasSuffix(".png") { return "image/png" }
        if lower.hasSuffix(".jpg") || lower.hasSuffix(".jpeg") { return "image/jpeg" }
        return nil
    }

    static func determinant3(_ m: Matrix4) -> Double {
        m[0, 0] * (m[1, 1] * m[2, 2] - m[1, 2] * m[2, 1]) - m[0, 1] * (m[1, 0] * m[2, 2] - m[1, 2] * m[2, 0])
            + m[0, 2] * (m[1, 0] * m[2, 1] - m[1, 1] * m[2, 0])
    }
}

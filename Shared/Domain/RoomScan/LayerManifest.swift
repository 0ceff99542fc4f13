import Contracts
import JSON
import USD

/// `layer_manifest.json`: what a transcode wrote and what the room is (schema:
/// `docs/layer_manifest.schema.json`).
public struct LayerManifest: Sendable {
    public struct Layer: Sendable {
        public let name: String
        public let glbKey: String
        public let glbBytes: Int
        /// Mesh prim paths.
        public let primPaths: [String]
        public let elementPaths: [String]
        /// Union of the meshes' world boxes in stage space (usd-core's BBoxCache).
        public let worldBounds: BoundingBox?
        public let summary: GLBWriter.Summary
    }

    public struct Finding: Sendable, Equatable {
        public let code: String
        public let severity: String
        public let message: String
    }

    public struct TextureRedactions: Sendable {
        public let texture: String
        /// Whether the package holds a file at that path.
        public let inPackage: Bool
        public let redactions: [Redaction]
    }

    public static let schemaVersion = 1

    public let roomId: String
    public let versionId: String
    public let packageSHA256: String
    public let packageBytes: Int
    public let roomPlanSHA256: String
    public let roomPlanBytes: Int
    public let upAxis: String
    public let metersPerUnit: Double
    public let layers: [Layer]
    public let grade: QualityGrade
    public let thumbnails: [(format: String, key: String, bytes: Int)]
    public let redactions: [TextureRedactions]
    public let findings: [Finding]

    public func json() -> [UInt8] {
        var w = JSONWriter(capacity: 4096)
        /// JSON has no infinities or NaN: null for them (hostile points can carry them).
        func number(_ value: Double) {
            if value.isFinite { w.double(value) } else { w.null() }
        }
        func box(_ b: BoundingBox) {
            w.beginObject()
            w.key("min"); w.beginArray(); number(b.min.x); number(b.min.y); number(b.min.z); w.endArray()
            w.key("max"); w.beginArray(); number(b.max.x); number(b.max.y); number(b.max.z); w.endArray()
            w.endObject()
        }
        func strings(_ values: [String]) {
            w.beginArray()
            for value in values { w.string(value) }
            w.endArray()
        }
        w.beginObject()
        w.key("schemaVersion"); w.int(LayerManifest.schemaVersion)
        w.key("roomId"); w.string(roomId)
        w.key("versionId"); w.string(versionId)
        w.key("package")
        w.beginObject()
        w.key("sha256"); w.string(packageSHA256)
        w.key("bytes"); w.int(packageBytes)
        w.key("upAxis"); w.string(upAxis)
        w.key("metersPerUnit"); number(metersPerUnit)
        w.endObject()
        w.key("roomPlan")
        w.beginObject()
        w.key("sha256"); w.string(roomPlanSHA256)
        w.key("bytes"); w.int(roomPlanBytes)
        w.endObject()
        w.key("layers")
        w.beginArray()
        for layer in layers {
            w.beginObject()
            w.key("name"); w.string(layer.name)
            w.key("glbKey"); w.string(layer.glbKey)
            w.key("glbBytes"); w.int(layer.glbBytes)
            w.key("primPaths"); strings(layer.primPaths)
            w.key("elementPaths"); strings(layer.elementPaths)
            w.key("worldBounds")
            if let bounds = layer.worldBounds { box(bounds) } else { w.null() }
            w.key("glbBounds")
            if layer.summary.bounds.isEmpty { w.null() } else { box(layer.summary.bounds) }
            w.key("meshCount"); w.int(layer.summary.meshCount)
            w.key("triangleCount"); w.int(layer.summary.triangleCount)
            w.key("sourcePointCount"); w.int(layer.summary.sourcePointCount)
            w.key("glbVertexCount"); w.int(layer.summary.vertexCount)
            w.key("textures"); strings(layer.summary.textures)
            w.endObject()
        }
        w.endArray()
        w.key("totals")
        w.beginObject()
        w.key("layerCount"); w.int(layers.count)
        w.key("meshCount"); w.int(layers.reduce(0) { $0 + $1.summary.meshCount })
        w.key("triangleCount"); w.int(layers.reduce(0) { $0 + $1.summary.triangleCount })
        w.key("sourcePointCount"); w.int(layers.reduce(0) { $0 + $1.summary.sourcePointCount })
        w.key("glbVertexCount"); w.int(layers.reduce(0) { $0 + $1.summary.vertexCount })
        w.key("glbBytes"); w.int(layers.reduce(0) { $0 + $1.glbBytes })
        w.endObject()
        w.key("grade")
        w.beginObject()
        w.key("grade"); w.string(grade.grade.rawValue)
        w.key("dimensions")
        w.beginArray()
        for dimension in grade.dimensions {
            w.beginObject()
            w.key("name"); w.string(dimension.name)
            w.key("grade")
            if let g = dimension.grade { w.string(g.rawValue) } else { w.null() }
            w.key("value")
            if let v = dimension.value { number(v) } else { w.null() }
            w.key("skipped"); w.bool(dimension.grade == nil)
            w.key("note"); w.string(dimension.note)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        w.key("thumbnails")
        w.beginArray()
        for thumbnail in thumbnails {
            w.beginObject()
            w.key("format"); w.string(thumbnail.format)
            w.key("key"); w.string(thumbnail.key)
            w.key("bytes"); w.int(thumbnail.bytes)
            w.key("width"); w.int(PlanThumbnail.size)
            w.key("height"); w.int(PlanThumbnail.size)
            w.endObject()
        }
        w.endArray()
        w.key("redactions")
        w.beginArray()
        for texture in redactions {
            w.beginObject()
            w.key("texture"); w.string(texture.texture)
            w.key("inPackage"); w.bool(texture.inPackage)
            // How many regions, never where: the manifest is handed to anyone who can see a
            // public room, and where the faces were is the owner's to know (their regions are
            // served to them alone, by the catalog's `/rest/v1/redactions`).
            w.key("count"); w.int(texture.redactions.count)
            w.endObject()
        }
        w.endArray()
        w.key("findings")
        w.beginArray()
        for finding in findings {
            w.beginObject()
            w.key("code"); w.string(finding.code)
            w.key("severity"); w.string(finding.severity)
            w.key("message"); w.string(finding.message)
            w.endObject()
        }
        w.endArray()
        w.endObject()
        return w.bytes
    }
}

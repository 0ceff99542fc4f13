/// What `backbone usd inspect` reports about a package: findings, stage metadata and, per
/// traversed prim, its type, world box, mesh counts and textures.
public struct InspectReport: Sendable {
    public struct PrimReport: Sendable, Equatable {
        public let path: String
        public let type: String
        public let kind: String?
        public let worldBounds: BoundingBox?
        public let vertexCount: Int
        public let triangleCount: Int
        /// Package entry paths of the textures of the prim's bound material.
        public let textures: [String]
        public let customData: [String: USDValue]
    }

    public let findings: [ValidationFinding]
    public let upAxis: String
    public let metersPerUnit: Double
    public let defaultPrim: String?
    public let prims: [PrimReport]

    /// Builds the report for a composed stage.
    public init(stage: USDStage) {
        let geometry = WorldGeometry()
        let traversal = stage.traverse()
        let boxes = geometry.computeBounds(traversal)
        prims = traversal.map { InspectReport.primReport($0, box: boxes[$0.row] ?? nil, in: stage) }
        findings = InspectReport.findings(of: stage, geometry)
        upAxis = stage.upAxis
        metersPerUnit = stage.metersPerUnit
        defaultPrim = stage.defaultPrim
    }

    /// Streams what `InspectReport(stage:).writeJSON` writes without keeping a report per
    /// prim; returns whether the report has error findings.
    public static func writeJSON(stage: USDStage, _ emit: (String) -> Void) -> Bool {
        let geometry = WorldGeometry()
        let traversal = stage.traverse()
        let boxes = geometry.computeBounds(traversal)
        let findings = findings(of: stage, geometry)
        emit(head(findings: findings, upAxis: stage.upAxis, metersPerUnit: stage.metersPerUnit, defaultPrim: stage.defaultPrim))
        for (index, prim) in traversal.enumerated() {
            emit((index == 0 ? "" : ",") + json(primReport(prim, box: boxes[prim.row] ?? nil, in: stage)))
        }
        emit("]}")
        return findings.contains { $0.severity == .error }
    }

    /// A prim's report, with its world box (from `computeBounds`).
    private static func primReport(_ prim: USDPrim, box: BoundingBox?, in stage: USDStage) -> PrimReport {
        PrimReport(path: prim.path, type: prim.typeName, kind: prim.kind, worldBounds: box,
                   vertexCount: prim.vertexCount, triangleCount: prim.triangleCount,
                   textures: MaterialTextures.textures(for: prim, in: stage), customData: prim.customData)
    }

    private static func findings(of stage: USDStage, _ geometry: WorldGeometry) -> [ValidationFinding] {
        var findings = stage.findings
        for problem in geometry.transformProblems.prefix(20) {
            findings.append(ValidationFinding(.unsupportedConstruct, .warning, problem))
        }
        return findings
    }

    /// The report for a package that could not be read at all.
    public init(failure: USDError, findings: [ValidationFinding] = []) {
        self.findings = findings + failure.findings.filter { !findings.contains($0) } + [ValidationFinding(ValidationFinding.Code(rawValue: failure.code.rawValue), .error, failure.description)]
        upAxis = "Y"
        metersPerUnit = 0.01
        defaultPrim = nil
        prims = []
    }

    public var hasErrors: Bool { findings.contains { $0.severity == .error } }

    /// One JSON object: `{"findings","upAxis","metersPerUnit","defaultPrim","prims"}`.
    public var json: String {
        var out = ""
        writeJSON { out += $0 }
        return out
    }

    /// Streams the JSON object in pieces (one per prim), so large reports need no big buffer.
    public func writeJSON(_ emit: (String) -> Void) {
        emit(InspectReport.head(findings: findings, upAxis: upAxis, metersPerUnit: metersPerUnit, defaultPrim: defaultPrim))
        for (index, prim) in prims.enumerated() {
            emit((index == 0 ? "" : ",") + InspectReport.json(prim))
        }
        emit("]}")
    }

    /// The object up to the opening of the `prims` array.
    private static func head(findings: [ValidationFinding], upAxis: String, metersPerUnit: Double, defaultPrim: String?) -> String {
        let head: JSONValue = .object([
            ("findings", .array(findings.map {
                .object([("code", .string($0.code.rawValue)), ("severity", .string($0.severity.rawValue)),
                         ("message", .string($0.message))])
            })),
            ("upAxis", .string(upAxis)),
            ("metersPerUnit", .number(metersPerUnit)),
            ("defaultPrim", defaultPrim.map { .string($0) } ?? .null),
        ])
        var text = head.text
        text.removeLast() // reopen the object to append the prims
        return text + ",\"prims\":["
    }

    private static func json(_ prim: PrimReport) -> String {
        func box(_ box: BoundingBox?) -> JSONValue {
            guard let box else { return .null }
            return .object([("min", .array([.number(box.min.x), .number(box.min.y), .number(box.min.z)])),
                            ("max", .array([.number(box.max.x), .number(box.max.y), .number(box.max.z)]))])
        }
        var members: [(String, JSONValue)] = [
            ("path", .string(prim.path)), ("type", .string(prim.type)), ("worldBounds", box(prim.worldBounds)),
            ("vertexCount", .int(prim.vertexCount)), ("triangleCount", .int(prim.triangleCount)),
            ("textures", .array(prim.textures.map { .string($0) })),
        ]
        if let kind = prim.kind { members.append(("kind", .string(kind))) }
        if !prim.customData.isEmpty { members.append(("customData", USDValue.dictionary(prim.customData).jsonObject)) }
        return JSONValue.object(members).text
    }

    /// A human-readable rendering: findings, then an indented prim tree.
    public var text: String {
        var out = "findings: \(findings.isEmpty ? "none" : "")\n"
        for finding in findings { out += "  \(finding.severity.rawValue.uppercased()) \(finding.code): \(finding.message)\n" }
        out += "upAxis \(upAxis), metersPerUnit \(metersPerUnit)\(defaultPrim.map { ", defaultPrim \($0)" } ?? "")\n"
        out += "prims (\(prims.count)):\n"
        for prim in prims {
            let depth = prim.path.split(separator: "/").count
            var line = String(repeating: "  ", count: depth) + (prim.path.split(separator: "/").last.map(String.init) ?? prim.path)
            line += " [\(prim.type.isEmpty ? "untyped" : prim.type)]"
            if let bounds = prim.worldBounds {
                func f(_ v: SIMD3<Double>) -> String { "(\(fmt(v.x)), \(fmt(v.y)), \(fmt(v.z)))" }
                line += " bounds \(f(bounds.min))–\(f(bounds.max))"
            }
            if prim.vertexCount > 0 { line += " \(prim.vertexCount) vertices, \(prim.triangleCount) triangles" }
            if !prim.textures.isEmpty { line += " textures: " + prim.textures.joined(separator: ", ") }
            out += line + "\n"
        }
        return out
    }

    private func fmt(_ value: Double) -> String {
        let rounded = (value * 10_000).rounded() / 10_000
        return "\(rounded)"
    }
}

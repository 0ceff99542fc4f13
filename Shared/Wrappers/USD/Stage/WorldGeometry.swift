/// World transforms and bounding boxes over a composed stage, computed the way
/// `UsdGeom.XformCache` and `UsdGeom.BBoxCache(default, ["default", "render"],
/// useExtentsHint=False)` do: extents (or points) of boundable prims, accumulated in the
/// space of the nearest enclosing component model, world-aligned at the end.
public final class WorldGeometry {
    /// A prim of a stage (rows of different stages are different keys).
    private struct PrimKey: Hashable {
        let table: ObjectIdentifier
        let row: Int32
        init(_ prim: USDPrim) {
            table = ObjectIdentifier(prim.table)
            row = prim.row
        }
    }

    private var worldCache: [PrimKey: Matrix4] = [:]
    private var problems: [String] = []
    /// Prims whose transform problems were recorded (each reports once).
    private var reported: Set<PrimKey> = []
    /// Where `bound` records each prim's world box while `computeBounds` runs.
    private var recording: PrimBoxes?
    static let includedPurposes: Set<String> = ["default", "render"]

    public init() {}

    /// Transform problems met so far (unknown ops, wrong value shapes).
    public var transformProblems: [String] { problems }

    /// The prim's local-to-world matrix.
    public func worldTransform(_ prim: USDPrim) -> Matrix4 {
        let key = PrimKey(prim)
        if let cached = worldCache[key] { return cached }
        let result = world(of: prim, parentWorld: prim.parent.map { worldTransform($0) } ?? .identity, report: true)
        worldCache[key] = result
        return result
    }

    /// The prim's world matrix from its parent's; `report` records transform problems.
    func world(of prim: USDPrim, parentWorld: Matrix4, report: Bool) -> Matrix4 {
        guard prim.isXformable, let order = prim.attribute("xformOpOrder")?.asStrings else { return parentWorld }
        var found: [String] = []
        let (local, resets) = XformStack.evaluate(order: order, value: prim.attribute) { problem in
            if report { found.append("\(prim.path): \(problem)") }
        }
        if !found.isEmpty, reported.insert(PrimKey(prim)).inserted {
            for problem in found where problems.count < 100 { problems.append(problem) }
        }
        return resets ? local : local * parentWorld
    }

    func startRecording(_ boxes: PrimBoxes) { recording = boxes }

    func stopRecording() -> PrimBoxes {
        defer { recording = nil }
        return recording ?? PrimBoxes(rows: 0)
    }

    /// The box recorded for a row while recording.
    func recorded(_ row: Int32) -> BoundingBox?? { recording?[row] ?? nil }

    /// Records a row's box (computed only while recording).
    func record(_ row: Int32, _ box: () -> BoundingBox) {
        guard recording != nil else { return }
        let box = box()
        recording?[row] = .some(box.isEmpty ? nil : box)
    }

    /// The world-space box of the prim's subtree, or nil when it has no bounded geometry:
    /// what `traversalBounds` gives for the prim.
    public func worldBounds(_ prim: USDPrim) -> BoundingBox? {
        let result = bound(prim, world: worldTransform(prim), frameInverse: traversalFrameInverse(of: prim))
        let box = result.range.transformed(by: result.frame)
        return box.isEmpty ? nil : box
    }

    /// Extent of a boundable prim in its own space: authored `extent`, else from points or
    /// the implicit shape's size.
    func localExtent(_ prim: USDPrim) -> BoundingBox? {
        if let extent = prim.attribute("extent")?.asNumbers, extent.count == 6 {
            return BoundingBox(min: SIMD3(extent[0], extent[1], extent[2]), max: SIMD3(extent[3], extent[4], extent[5]))
        }
        if USDPrim.pointBasedTypes.contains(prim.typeName) {
            guard let points = prim.attribute("points")?.asNumbers, points.count >= 3 else { return nil }
            var box = BoundingBox.empty
            var i = 0
            while i + 2 < points.count {
                // Extents are float3: round like usd-core does before widening.
                box.include(SIMD3(Double(Float(points[i])), Double(Float(points[i + 1])), Double(Float(points[i + 2]))))
                i += 3
            }
            return box
        }
        return ImplicitShapes.extent(prim)
    }

    /// Whether the prim is drawn: visible (no `invisible` on the way up) and of the default
    /// or render purpose — the prims the bounds count.
    public func isRendered(_ prim: USDPrim) -> Bool {
        isVisible(prim) && WorldGeometry.includedPurposes.contains(purpose(prim))
    }

    func isComponent(_ prim: USDPrim) -> Bool { prim.kind == "component" || prim.kind == "subcomponent" }

    func purpose(_ prim: USDPrim) -> String {
        var current: USDPrim? = prim
        while let p = current {
            if let value = p.attribute("purpose")?.asString { return value }
            current = p.parent
        }
        return "default"
    }

    func isVisible(_ prim: USDPrim) -> Bool {
        var current: USDPrim? = prim
        while let p = current {
            if p.attribute("visibility")?.asString == "invisible" { return false }
            current = p.parent
        }
        return true
    }
}

/// Extents of implicit shapes (Cube, Sphere, Cylinder, Cone, Capsule) from their size attributes.
enum ImplicitShapes {
    static func extent(_ prim: USDPrim) -> BoundingBox? {
        func number(_ name: String, _ fallback: Double) -> Double { prim.attribute(name)?.asNumbers?.first ?? fallback }
        func axisBox(radius: Double, half: Double) -> BoundingBox {
            let axis = prim.attribute("axis")?.asString ?? "Z"
            var extent = SIMD3(radius, radius, radius)
            extent[axis == "X" ? 0 : axis == "Y" ? 1 : 2] = half
            return BoundingBox(min: -extent, max: extent)
        }
        switch prim.typeName {
        case "Cube":
            let half = number("size", 2) / 2
            return BoundingBox(min: SIMD3(repeating: -half), max: SIMD3(repeating: half))
        case "Sphere":
            let radius = number("radius", 1)
            return BoundingBox(min: SIMD3(repeating: -radius), max: SIMD3(repeating: radius))
        case "Cylinder", "Cone":
            return axisBox(radius: number("radius", 1), half: number("height", 2) / 2)
        case "Capsule":
            let radius = number("radius", 0.5)
            return axisBox(radius: radius, half: number("height", 1) / 2 + radius)
        default:
            return nil
        }
    }
}

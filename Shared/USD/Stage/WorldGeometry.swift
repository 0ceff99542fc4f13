/// World transforms and bounding boxes over a composed stage, computed the way
/// `UsdGeom.XformCache` and `UsdGeom.BBoxCache(default, ["default", "render"],
/// useExtentsHint=False)` do: extents (or points) of boundable prims, accumulated in the
/// space of the nearest enclosing component model, world-aligned at the end.
public final class WorldGeometry {
    private var worldCache: [ObjectIdentifier: Matrix4] = [:]
    private var boundCache: [ObjectIdentifier: (range: BoundingBox, frame: Matrix4)] = [:]
    private var problems: [String] = []
    static let includedPurposes: Set<String> = ["default", "render"]

    public init() {}

    /// Transform problems met so far (unknown ops, wrong value shapes).
    public var transformProblems: [String] { problems }

    /// The prim's local-to-world matrix.
    public func worldTransform(_ prim: USDPrim) -> Matrix4 {
        let key = ObjectIdentifier(prim)
        if let cached = worldCache[key] { return cached }
        let result = world(of: prim, parentWorld: prim.parent.map { worldTransform($0) } ?? .identity, report: true)
        worldCache[key] = result
        return result
    }

    /// The prim's world matrix from its parent's; `report` records transform problems.
    func world(of prim: USDPrim, parentWorld: Matrix4, report: Bool) -> Matrix4 {
        guard prim.isXformable, let order = prim.attributes["xformOpOrder"]?.asStrings else { return parentWorld }
        let (local, resets) = XformStack.evaluate(order: order, attributes: prim.attributes) { problem in
            if report, problems.count < 100 { problems.append("\(prim.path): \(problem)") }
        }
        return resets ? local : local * parentWorld
    }

    /// The world-space box of the prim's subtree, or nil when it has no bounded geometry.
    public func worldBounds(_ prim: USDPrim) -> BoundingBox? {
        guard let entry = resolve(prim, frameInverse: nil) else { return nil }
        let box = entry.range.transformed(by: entry.frame)
        return box.isEmpty ? nil : box
    }

    /// Extent of a boundable prim in its own space: authored `extent`, else from points or
    /// the implicit shape's size.
    func localExtent(_ prim: USDPrim) -> BoundingBox? {
        if let extent = prim.attributes["extent"]?.asNumbers, extent.count == 6 {
            return BoundingBox(min: SIMD3(extent[0], extent[1], extent[2]), max: SIMD3(extent[3], extent[4], extent[5]))
        }
        if USDPrim.pointBasedTypes.contains(prim.typeName) {
            guard let points = prim.attributes["points"]?.asNumbers, points.count >= 3 else { return nil }
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

    func isComponent(_ prim: USDPrim) -> Bool { prim.kind == "component" || prim.kind == "subcomponent" }

    func purpose(_ prim: USDPrim) -> String {
        var current: USDPrim? = prim
        while let p = current {
            if let value = p.attributes["purpose"]?.asString { return value }
            current = p.parent
        }
        return "default"
    }

    func isVisible(_ prim: USDPrim) -> Bool {
        var current: USDPrim? = prim
        while let p = current {
            if p.attributes["visibility"]?.asString == "invisible" { return false }
            current = p.parent
        }
        return true
    }

    /// Resolves a prim's bound: a range plus the matrix from that range's space to world.
    /// `frameInverse` is the inverse world matrix of the enclosing component (nil = world).
    private func resolve(_ prim: USDPrim, frameInverse: Matrix4?) -> (range: BoundingBox, frame: Matrix4)? {
        let key = ObjectIdentifier(prim)
        if let cached = boundCache[key] { return cached }
        let world = worldTransform(prim)
        var result: (range: BoundingBox, frame: Matrix4)
        if prim.isBoundable, let extent = localExtent(prim) {
            let included = WorldGeometry.includedPurposes.contains(purpose(prim))
            result = (included ? extent : .empty, world)
        } else {
            let ownInverse: Matrix4? = isComponent(prim) ? (world.inverse ?? nil) : frameInverse
            let frame = ownInverse.flatMap { $0.inverse } ?? .identity
            var range = BoundingBox.empty
            for child in prim.children where child.active && child.isDefined && child.isImageable && isVisible(child) {
                guard let childBound = resolve(child, frameInverse: ownInverse), !childBound.range.isEmpty else { continue }
                let toFrame = ownInverse.map { childBound.frame * $0 } ?? childBound.frame
                range.formUnion(childBound.range.transformed(by: toFrame))
            }
            result = (range, frame)
        }
        boundCache[key] = result
        return result
    }
}

/// Extents of implicit shapes (Cube, Sphere, Cylinder, Cone, Capsule) from their size attributes.
enum ImplicitShapes {
    static func extent(_ prim: USDPrim) -> BoundingBox? {
        func number(_ name: String, _ fallback: Double) -> Double { prim.attributes[name]?.asNumbers?.first ?? fallback }
        func axisBox(radius: Double, half: Double) -> BoundingBox {
            let axis = prim.attributes["axis"]?.asString ?? "Z"
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

/// World boxes of a whole traversal in one pass, without caching a matrix and a range per
/// prim: each prim keeps only its final box, ranges travel up the recursion and world
/// matrices down it. Gives exactly what calling `worldBounds` on each prim in order gives.
extension WorldGeometry {
    /// The world box of each prim of `prims` (depth-first order, as `traverse()` returns).
    public func traversalBounds(_ prims: [USDPrim]) -> [BoundingBox?] {
        computeBounds(prims)
        defer { clearBounds(prims) }
        return prims.map { $0.computedWorldBox ?? nil }
    }

    /// Computes the world box of every prim of `prims` and leaves it on the prim
    /// (`computedWorldBox`) until `clearBounds`.
    func computeBounds(_ prims: [USDPrim]) {
        for prim in prims where prim.computedWorldBox == nil {
            // Ancestors in the traversal came first and reported their problems then.
            _ = bound(prim, world: world(of: prim, parentWorld: silentWorld(prim.parent), report: true), frameInverse: nil)
        }
    }

    func clearBounds(_ prims: [USDPrim]) {
        for prim in prims { prim.computedWorldBox = nil }
    }

    /// The prim's world matrix, walking up without caching or reporting.
    private func silentWorld(_ prim: USDPrim?) -> Matrix4 {
        guard let prim else { return .identity }
        return world(of: prim, parentWorld: silentWorld(prim.parent), report: false)
    }

    /// The prim's range and the matrix from the range's space to world (see `resolve`);
    /// records the prim's world box on it.
    private func bound(_ prim: USDPrim, world: Matrix4, frameInverse: Matrix4?) -> (range: BoundingBox, frame: Matrix4) {
        var result: (range: BoundingBox, frame: Matrix4)
        if prim.isBoundable, let extent = localExtent(prim) {
            let included = WorldGeometry.includedPurposes.contains(purpose(prim))
            result = (included ? extent : .empty, world)
        } else {
            let ownInverse: Matrix4? = isComponent(prim) ? (world.inverse ?? nil) : frameInverse
            let frame = ownInverse.flatMap { $0.inverse } ?? .identity
            var range = BoundingBox.empty
            for child in prim.children where child.active && child.isDefined && child.isImageable && isVisible(child) {
                let childWorld = self.world(of: child, parentWorld: world, report: true)
                let childBound = bound(child, world: childWorld, frameInverse: ownInverse)
                guard !childBound.range.isEmpty else { continue }
                let toFrame = ownInverse.map { childBound.frame * $0 } ?? childBound.frame
                range.formUnion(childBound.range.transformed(by: toFrame))
            }
            result = (range, frame)
        }
        let box = result.range.transformed(by: result.frame)
        prim.computedWorldBox = .some(box.isEmpty ? nil : box)
        return result
    }
}

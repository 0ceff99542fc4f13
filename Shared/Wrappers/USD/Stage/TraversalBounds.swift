/// World boxes: the one implementation of the bounding rules, used for one prim
/// (`worldBounds`) and for a whole traversal in one pass (`computeBounds`), where ranges
/// travel up the recursion, world matrices down it, and each prim's final box is recorded
/// by row without caching a matrix and a range per prim.
extension WorldGeometry {
    /// The world box of each prim of `prims` (depth-first order, as `traverse()` returns).
    public func traversalBounds(_ prims: [USDPrim]) -> [BoundingBox?] {
        let boxes = computeBounds(prims)
        return prims.map { boxes[$0.row] ?? nil }
    }

    /// The world box of every prim of `prims` (of one stage), by row; the same as calling
    /// `worldBounds` on each prim.
    func computeBounds(_ prims: [USDPrim]) -> PrimBoxes {
        guard let table = prims.first?.table else { return PrimBoxes(rows: 0) }
        startRecording(PrimBoxes(rows: table.count))
        for prim in prims where recorded(prim.row) == nil {
            // Ancestors in the traversal came first and reported their problems then.
            _ = bound(prim, world: world(of: prim, parentWorld: silentWorld(prim.parent), report: true), frameInverse: nil)
        }
        return stopRecording()
    }

    /// The `frameInverse` a traversal computes the prim's box with: that of the nearest
    /// enclosing component when the prim is reached by an ancestor's recursion in `bound`,
    /// nil when the traversal starts at the prim itself.
    func traversalFrameInverse(of prim: USDPrim) -> Matrix4? {
        var chain: [USDPrim] = []
        var current: USDPrim? = prim
        while let node = current, node.row != 0 {
            chain.append(node)
            current = node.parent
        }
        var world = Matrix4.identity
        var frameInverse: Matrix4?
        var parent: (prim: USDPrim, ownInverse: Matrix4?)?
        for node in chain.reversed() {
            world = self.world(of: node, parentWorld: world, report: false)
            if let parent, !(parent.prim.isBoundable && localExtent(parent.prim) != nil),
               node.active, node.isDefined, node.contributesToBounds, isVisible(node) {
                frameInverse = parent.ownInverse
            } else {
                frameInverse = nil
            }
            parent = (node, isComponent(node) ? (world.inverse ?? nil) : frameInverse)
        }
        return frameInverse
    }

    /// The prim's world matrix, walking up without caching or reporting.
    private func silentWorld(_ prim: USDPrim?) -> Matrix4 {
        guard let prim else { return .identity }
        return world(of: prim, parentWorld: silentWorld(prim.parent), report: false)
    }

    /// The prim's range and the matrix from the range's space to world (`world` is the
    /// prim's world matrix, `frameInverse` the inverse world matrix of the enclosing
    /// component, nil = world); records the prim's world box while recording.
    func bound(_ prim: USDPrim, world: Matrix4, frameInverse: Matrix4?) -> (range: BoundingBox, frame: Matrix4) {
        var result: (range: BoundingBox, frame: Matrix4)
        if prim.isBoundable, let extent = localExtent(prim) {
            let included = WorldGeometry.includedPurposes.contains(purpose(prim))
            result = (included ? extent : .empty, world)
        } else {
            let ownInverse: Matrix4? = isComponent(prim) ? (world.inverse ?? nil) : frameInverse
            let frame = ownInverse.flatMap { $0.inverse } ?? .identity
            var range = BoundingBox.empty
            for child in prim.table.children(prim.row) {
                let child = USDPrim(table: prim.table, row: child)
                guard child.active, child.isDefined, child.contributesToBounds, isVisible(child) else { continue }
                let childWorld = self.world(of: child, parentWorld: world, report: true)
                let childBound = bound(child, world: childWorld, frameInverse: ownInverse)
                guard !childBound.range.isEmpty else { continue }
                let toFrame = ownInverse.map { childBound.frame * $0 } ?? childBound.frame
                range.formUnion(childBound.range.transformed(by: toFrame))
            }
            result = (range, frame)
        }
        record(prim.row) { result.range.transformed(by: result.frame) }
        return result
    }
}

/// World boxes by prim row: six doubles a row and a state byte (no per-prim object, no
/// optional or SIMD padding).
struct PrimBoxes {
    private var coordinates: [Double]
    /// 0 not computed, 1 computed and empty, 2 computed.
    private var states: [UInt8]

    init(rows: Int) {
        coordinates = [Double](repeating: 0, count: rows * 6)
        states = [UInt8](repeating: 0, count: rows)
    }

    /// nil until computed, then the box (nil when empty).
    subscript(row: Int32) -> BoundingBox?? {
        get {
            let row = Int(row)
            switch states[row] {
            case 0: return nil
            case 1: return .some(nil)
            default:
                let c = row * 6
                return .some(BoundingBox(min: SIMD3(coordinates[c], coordinates[c + 1], coordinates[c + 2]),
                                         max: SIMD3(coordinates[c + 3], coordinates[c + 4], coordinates[c + 5])))
            }
        }
        set {
            let row = Int(row)
            switch newValue {
            case nil: states[row] = 0
            case .some(nil): states[row] = 1
            case .some(let box?):
                let c = row * 6
                coordinates[c] = box.min.x
                coordinates[c + 1] = box.min.y
                coordinates[c + 2] = box.min.z
                coordinates[c + 3] = box.max.x
                coordinates[c + 4] = box.max.y
                coordinates[c + 5] = box.max.z
                states[row] = 2
            }
        }
    }
}

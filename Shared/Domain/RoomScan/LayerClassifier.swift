import USD

/// Splits a room's meshes into layers.
///
/// The rule, for each `Mesh` prim of the composed stage: walk from the prim up to the root
/// and take the first prim that names a layer — by its `customData.Category` (RoomPlan's
/// iOS 17 exports), else by a word of its name (split at `_` and trailing digits:
/// `Wall_0_grp`, `Table0_body`, `WasherDryer_grp`). A mesh nothing names goes to `other`.
/// The element a mesh belongs to is its topmost ancestor-or-self outside a `_grp` group
/// that names the same layer (`Table0` for `/…/Table_grp/Table0/Geom_grp/Table0_body`).
/// Element counts per layer are then checked against `roomplan.json`. Invisible and
/// guide/proxy meshes belong to no layer.
public struct RoomLayers: Sendable {
    public struct Layer: Sendable, Equatable {
        public let layer: RoomLayer
        /// Mesh prim paths in traversal order.
        public let meshPaths: [String]
        /// Element prim paths (one per RoomPlan element) in traversal order.
        public let elementPaths: [String]
    }

    /// A layer whose element count differs from `roomplan.json`'s.
    public struct CountMismatch: Sendable, Equatable, CustomStringConvertible {
        public let layer: RoomLayer
        public let inPackage: Int
        public let inRoomPlan: Int
        public var description: String {
            "\(layer): \(inPackage) elements in the package, \(inRoomPlan) in roomplan.json"
        }
    }

    /// Non-empty layers in manifest order.
    public let layers: [Layer]
    public let mismatches: [CountMismatch]

    /// Layers of the stage's drawn meshes (invisible and guide/proxy meshes are left out,
    /// as the bounds leave them out).
    public init(stage: USDStage, room: CapturedRoom) {
        self.init(traversal: stage.traverse(), room: room)
    }

    /// Layers of the meshes of `traversal` (what `stage.traverse()` gave).
    init(traversal: [USDPrim], room: CapturedRoom) {
        let geometry = WorldGeometry()
        var meshes: [RoomLayer: [String]] = [:]
        var elements: [RoomLayer: [String]] = [:]
        var seenElements: Set<String> = []
        for prim in traversal where prim.typeName == "Mesh" && geometry.isRendered(prim) {
            let (layer, element) = RoomLayers.classify(prim)
            meshes[layer, default: []].append(prim.path)
            if let element, seenElements.insert(element).inserted { elements[layer, default: []].append(element) }
        }
        layers = meshes.keys.sorted().map { Layer(layer: $0, meshPaths: meshes[$0] ?? [], elementPaths: elements[$0] ?? []) }
        mismatches = RoomLayer.all.compactMap { layer in
            guard let source = layer.roomPlanSource else { return nil }
            let expected = room.elements(source.kind).filter { source.category == nil || $0.category == source.category }.count
            let found = elements[layer]?.count ?? 0
            return expected == found ? nil : CountMismatch(layer: layer, inPackage: found, inRoomPlan: expected)
        }
    }

    /// The layer of a mesh and the path of its element (nil for `other`).
    static func classify(_ mesh: USDPrim) -> (RoomLayer, String?) {
        var chain: [USDPrim] = []
        var current: USDPrim? = mesh
        while let prim = current, !prim.path.isEmpty, prim.path != "/" {
            chain.append(prim)
            current = prim.parent
        }
        guard let named = chain.firstIndex(where: { layer(namedBy: $0) != nil }), let layer = layer(namedBy: chain[named]) else {
            return (.other, nil)
        }
        let element = chain[named...].last { !$0.name.hasSuffix("_grp") && self.layer(namedBy: $0) == layer }
        return (layer, (element ?? chain[named]).path)
    }

    /// The layer a prim names by `customData.Category` or by a word of its name.
    static func layer(namedBy prim: USDPrim) -> RoomLayer? {
        if let category = prim.customData["Category"]?.asString, let layer = RoomLayer.named(category) { return layer }
        for word in prim.name.split(separator: "_") {
            let letters = word.prefix { !$0.isNumber }
            if let layer = RoomLayer.named(String(letters)) { return layer }
        }
        return nil
    }
}

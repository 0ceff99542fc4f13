/// A composed prim: a row of its stage's prim table (a handle: two words, no object per
/// prim). Its fields are read from the table's columns when asked.
public struct USDPrim {
    let table: PrimTable
    let row: Int32

    init(table: PrimTable, row: Int32) {
        self.table = table
        self.row = row
    }

    /// The absolute path (`/A/B`; `/` for the pseudo-root).
    public var path: String { table.path(row) }
    public var name: String { row == 0 ? "" : table.name(row) }
    public var typeName: String { table.typeName(row) }
    public var kind: String? { table.kind(row) }
    public var customData: [String: USDValue] { table.customData[row] ?? [:] }
    /// Attribute values in authoring order; asset paths already resolved to package entry
    /// paths where possible. Decodes every value: `attribute(_:)` reads one.
    public var attributes: AttributeTable {
        var result = AttributeTable()
        for attribute in table.attributes(row) { result[table.attributeName(attribute)] = table.value(of: attribute) }
        return result
    }
    public var relationships: [String: [String]] { table.relationships[row] ?? [:] }
    public var children: [USDPrim] { table.children(row).map { USDPrim(table: table, row: $0) } }
    public var parent: USDPrim? {
        let parent = table.parent(row)
        return parent == PrimTable.noRow ? nil : USDPrim(table: table, row: parent)
    }
    public var specifier: Specifier { table.specifier(row) }
    public var active: Bool { table.active(row) ?? true }

    /// Defined (some spec says `def`) and not abstract (no `class` on the way up).
    public var isDefined: Bool { specifier == .def }

    /// One attribute's value.
    public func attribute(_ name: String) -> USDValue? { table.attributeValue(row, name) }

    /// Types whose prims carry an `xformOp` stack.
    static let xformableTypes: Set<String> = [
        "Xform", "Mesh", "Cube", "Sphere", "Cylinder", "Cylinder_1", "Cone", "Capsule", "Capsule_1", "Plane",
        "Points", "BasisCurves", "NurbsCurves", "HermiteCurves", "NurbsPatch", "TetMesh", "PointInstancer",
        "Camera", "SkelRoot", "Skeleton", "Volume", "DistantLight", "DomeLight", "DomeLight_1", "RectLight",
        "SphereLight", "DiskLight", "CylinderLight", "PortalLight", "GeometryLight",
    ]
    /// Types whose prims have an extent (UsdGeomBoundable).
    static let boundableTypes: Set<String> = [
        "Mesh", "Cube", "Sphere", "Cylinder", "Cylinder_1", "Cone", "Capsule", "Capsule_1", "Plane", "Points",
        "BasisCurves", "NurbsCurves", "HermiteCurves", "NurbsPatch", "TetMesh", "PointInstancer", "SkelRoot", "Volume",
    ]
    static let pointBasedTypes: Set<String> = [
        "Mesh", "Points", "BasisCurves", "NurbsCurves", "HermiteCurves", "NurbsPatch", "TetMesh",
    ]

    /// Typed schemas that are not imageable: `BBoxCache` prunes them with their subtrees.
    static let nonImageableTypes: Set<String> = [
        "Material", "Shader", "NodeGraph", "GeomSubset", "SkelAnimation", "BlendShape", "RenderSettings",
        "RenderProduct", "RenderVar", "RenderPass", "PhysicsScene", "PhysicsCollisionGroup", "Backdrop",
    ]

    public var isXformable: Bool { USDPrim.xformableTypes.contains(typeName) }
    public var isImageable: Bool { isXformable || typeName == "Scope" }
    /// Whether bounds accumulate through the prim: imageable prims, and prims that are
    /// untyped or of a type that is not a known schema (they may hold imageable
    /// descendants, as RoomPlan's `def "Object_grp"` groups do); known non-imageable
    /// schemas (materials, shaders, subsets…) are pruned, as `UsdGeom.BBoxCache` does.
    public var contributesToBounds: Bool { !USDPrim.nonImageableTypes.contains(typeName) }
    public var isBoundable: Bool { USDPrim.boundableTypes.contains(typeName) }

    /// Number of points of a mesh (0 for other prims).
    public var vertexCount: Int {
        guard typeName == "Mesh", let points = attribute("points")?.asNumbers else { return 0 }
        return points.count / 3
    }

    /// Triangles after fan triangulation of every face (0 for other prims).
    public var triangleCount: Int {
        guard typeName == "Mesh", let counts = attribute("faceVertexCounts")?.asNumbers else { return 0 }
        return counts.reduce(0) { $0 + Swift.max(0, Int($1) - 2) }
    }
}

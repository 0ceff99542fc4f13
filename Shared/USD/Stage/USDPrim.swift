/// A composed prim: the strongest opinions of every spec that contributes to its path.
public final class USDPrim {
    // Stored properties are laid out in this order: words first, bytes last, no SIMD fields
    // (a SIMD3<Double> would align the whole object to 32 bytes).
    public let path: String
    public let name: String
    public internal(set) var typeName: String = ""
    public internal(set) var kind: String?
    public internal(set) var customData: [String: USDValue] = [:]
    /// Attribute values; asset paths already resolved to package entry paths where possible.
    public internal(set) var attributes = AttributeTable()
    public internal(set) var relationships: [String: [String]] = [:]
    public internal(set) var children: [USDPrim] = []
    public private(set) weak var parent: USDPrim?
    private var scratchBox: (Double, Double, Double, Double, Double, Double) = (0, 0, 0, 0, 0, 0)
    public internal(set) var specifier: Specifier = .over
    public internal(set) var active: Bool = true
    /// 0 not computed, 1 computed and empty, 2 computed (`scratchBox`).
    private var scratchState: UInt8 = 0

    /// Scratch space of `WorldGeometry.traversalBounds`: nil until the box is computed.
    var computedWorldBox: BoundingBox?? {
        get {
            switch scratchState {
            case 0: return nil
            case 1: return .some(nil)
            default:
                let b = scratchBox
                return .some(BoundingBox(min: SIMD3(b.0, b.1, b.2), max: SIMD3(b.3, b.4, b.5)))
            }
        }
        set {
            switch newValue {
            case nil: scratchState = 0
            case .some(nil): scratchState = 1
            case .some(let box?):
                scratchBox = (box.min.x, box.min.y, box.min.z, box.max.x, box.max.y, box.max.z)
                scratchState = 2
            }
        }
    }

    init(path: String, name: String, parent: USDPrim?) {
        self.path = path
        self.name = name
        self.parent = parent
    }

    /// Defined (some spec says `def`) and not abstract (no `class` on the way up).
    public var isDefined: Bool { specifier == .def }

    public func attribute(_ name: String) -> USDValue? { attributes[name] }

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

    public var isXformable: Bool { USDPrim.xformableTypes.contains(typeName) }
    public var isImageable: Bool { isXformable || typeName == "Scope" }
    public var isBoundable: Bool { USDPrim.boundableTypes.contains(typeName) }

    /// Number of points of a mesh (0 for other prims).
    public var vertexCount: Int {
        guard typeName == "Mesh", let points = attributes["points"]?.asNumbers else { return 0 }
        return points.count / 3
    }

    /// Triangles after fan triangulation of every face (0 for other prims).
    public var triangleCount: Int {
        guard typeName == "Mesh", let counts = attributes["faceVertexCounts"]?.asNumbers else { return 0 }
        return counts.reduce(0) { $0 + Swift.max(0, Int($1) - 2) }
    }
}

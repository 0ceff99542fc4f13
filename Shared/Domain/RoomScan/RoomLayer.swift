/// The layers a room is split into: one per architectural kind, one per RoomPlan object
/// category, and `other` for what names no category.
public struct RoomLayer: RawRepresentable, Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }

    public static let walls = RoomLayer(rawValue: "walls")
    public static let doors = RoomLayer(rawValue: "doors")
    public static let windows = RoomLayer(rawValue: "windows")
    public static let openings = RoomLayer(rawValue: "openings")
    public static let floors = RoomLayer(rawValue: "floors")
    public static let other = RoomLayer(rawValue: "other")

    /// RoomPlan's 16 object categories, spelled as in `roomplan.json`.
    public static let objectCategories = [
        "storage", "refrigerator", "stove", "bed", "sink", "washerDryer", "toilet", "bathtub", "oven", "dishwasher",
        "table", "sofa", "chair", "fireplace", "television", "stairs",
    ]

    /// Every layer in manifest order.
    public static let all: [RoomLayer] =
        [.walls, .doors, .windows, .openings, .floors] + objectCategories.map(RoomLayer.init(rawValue:)) + [.other]

    /// The CapturedRoom list whose elements this layer holds, and for objects the category.
    public var roomPlanSource: (kind: CapturedRoom.Kind, category: String?)? {
        switch self {
        case .walls: (.walls, nil)
        case .doors: (.doors, nil)
        case .windows: (.windows, nil)
        case .openings: (.openings, nil)
        case .floors: (.floors, nil)
        case .other: nil
        default: (.objects, rawValue)
        }
    }

    /// The layer a word names (`Wall`, `wall`, `Storage`, `washerdryer`…), if any.
    public static func named(_ word: String) -> RoomLayer? {
        keywords[word.lowercased()]
    }

    private static let keywords: [String: RoomLayer] = {
        var table: [String: RoomLayer] = [
            "wall": .walls, "walls": .walls, "door": .doors, "doors": .doors, "window": .windows, "windows": .windows,
            "opening": .openings, "openings": .openings, "floor": .floors, "floors": .floors,
        ]
        for category in objectCategories { table[category.lowercased()] = RoomLayer(rawValue: category) }
        return table
    }()

    private static let order = Dictionary(uniqueKeysWithValues: all.enumerated().map { ($1, $0) })
    public static func < (lhs: RoomLayer, rhs: RoomLayer) -> Bool {
        (order[lhs] ?? Int.max, lhs.rawValue) < (order[rhs] ?? Int.max, rhs.rawValue)
    }
}

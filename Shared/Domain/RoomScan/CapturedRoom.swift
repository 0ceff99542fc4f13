import Foundation

/// The parts of Apple's `CapturedRoom` JSON (`roomplan.json`, kept byte for byte by the app)
/// the transcoder uses; unknown keys are ignored.
public struct CapturedRoom: Sendable, Equatable {
    /// The element lists of a CapturedRoom, by their JSON key.
    public enum Kind: String, Sendable, CaseIterable {
        case walls, doors, windows, openings, floors, objects
    }

    public enum Confidence: String, Sendable {
        case high, medium, low
    }

    /// One wall, door, window, opening, floor or object.
    public struct Element: Sendable, Equatable {
        public let identifier: UUID
        /// The single key of `category` (`wall`, `door`, `table`, `washerDryer`…).
        public let category: String
        /// Attributes of the category object (`{"door":{"isOpen":false}}` → `isOpen`).
        public let isOpen: Bool?
        public let confidence: Confidence
        /// `[width, height, depth]` in metres.
        public let dimensions: SIMD3<Double>
        /// Column-major 4×4: column 0 is the element's local x axis, 12–14 its centre.
        public let transform: [Double]
        public let parentIdentifier: UUID?
        public let polygonCorners: [SIMD3<Double>]

        /// The element's centre in room space.
        public var center: SIMD3<Double> { SIMD3(transform[12], transform[13], transform[14]) }
        /// The element's local x axis (unit length for a rigid transform).
        public var xAxis: SIMD3<Double> { SIMD3(transform[0], transform[1], transform[2]) }
        /// The element's local z axis.
        public var zAxis: SIMD3<Double> { SIMD3(transform[8], transform[9], transform[10]) }
    }

    public let version: Int?
    public let story: Int?
    public let walls: [Element]
    public let doors: [Element]
    public let windows: [Element]
    public let openings: [Element]
    public let floors: [Element]
    public let objects: [Element]
    /// Section labels (`livingRoom`, `kitchen`…).
    public let sectionLabels: [String]

    public func elements(_ kind: Kind) -> [Element] {
        switch kind {
        case .walls: walls
        case .doors: doors
        case .windows: windows
        case .openings: openings
        case .floors: floors
        case .objects: objects
        }
    }

    /// Largest `roomplan.json` accepted (Apple's files of whole flats stay far below).
    public static let maximumBytes = 32 << 20
    /// Most elements of one kind accepted.
    public static let maximumElements = 5_000

    /// Parses `roomplan.json`; throws `RoomScanError` naming the first problem found.
    public init(json data: Data) throws {
        guard data.count <= CapturedRoom.maximumBytes else {
            throw RoomScanError(.roomPlanTooLarge, "roomplan.json is \(data.count) bytes, more than \(CapturedRoom.maximumBytes)")
        }
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: data)
        } catch {
            throw RoomScanError(.roomPlanMalformed, "roomplan.json is not valid JSON")
        }
        guard let root = parsed as? [String: Any] else {
            throw RoomScanError(.roomPlanMalformed, "roomplan.json is not a JSON object")
        }
        func list(_ kind: Kind, required: Bool) throws -> [Element] {
            guard let value = root[kind.rawValue], !(value is NSNull) else {
                if required { throw RoomScanError(.roomPlanMalformed, "roomplan.json has no \"\(kind.rawValue)\" list") }
                return []
            }
            guard let items = value as? [Any] else {
                throw RoomScanError(.roomPlanMalformed, "\(kind.rawValue): expected a list")
            }
            guard items.count <= CapturedRoom.maximumElements else {
                throw RoomScanError(.roomPlanTooLarge, "\(kind.rawValue): \(items.count) elements, more than \(CapturedRoom.maximumElements)")
            }
            return try items.enumerated().map { try Element(parsing: $1, at: "\(kind.rawValue)[\($0)]") }
        }
        walls = try list(.walls, required: true)
        doors = try list(.doors, required: true)
        windows = try list(.windows, required: true)
        openings = try list(.openings, required: false)
        floors = try list(.floors, required: false)
        objects = try list(.objects, required: true)
        version = (root["version"] as? NSNumber)?.intValue
        story = (root["story"] as? NSNumber)?.intValue
        sectionLabels = (root["sections"] as? [Any] ?? []).compactMap { ($0 as? [String: Any])?["label"] as? String }
    }
}

extension CapturedRoom.Element {
    init(parsing value: Any, at place: String) throws {
        func fail(_ what: String) -> RoomScanError { RoomScanError(.roomPlanMalformed, "\(place).\(what)") }
        guard let object = value as? [String: Any] else { throw RoomScanError(.roomPlanMalformed, "\(place): expected an object") }
        guard let id = object["identifier"] as? String else { throw fail("identifier: missing") }
        guard let identifier = UUID(uuidString: id) else { throw fail("identifier: \"\(id.prefix(64))\" is not a UUID") }
        self.identifier = identifier
        let (category, attributes) = try Self.oneKey(object["category"], fail("category: expected a one-key object like {\"wall\":{}}"))
        self.category = category
        isOpen = attributes["isOpen"] as? Bool
        let (confidenceKey, _) = try Self.oneKey(object["confidence"], fail("confidence: expected {\"high\":{}}, {\"medium\":{}} or {\"low\":{}}"))
        guard let confidence = CapturedRoom.Confidence(rawValue: confidenceKey) else {
            throw fail("confidence: \"\(confidenceKey.prefix(64))\" is not high, medium or low")
        }
        self.confidence = confidence
        let dimensions = try Self.numbers(object["dimensions"], count: 3, fail("dimensions"))
        guard dimensions.allSatisfy({ $0 >= 0 && $0 < 1_000 }) else { throw fail("dimensions: outside 0–1000 m") }
        self.dimensions = SIMD3(dimensions[0], dimensions[1], dimensions[2])
        transform = try Self.numbers(object["transform"], count: 16, fail("transform"))
        guard transform.allSatisfy({ abs($0) < 100_000 }) else { throw fail("transform: coordinates beyond 100 km") }
        if let parent = object["parentIdentifier"], !(parent is NSNull) {
            guard let text = parent as? String, let uuid = UUID(uuidString: text) else { throw fail("parentIdentifier: not a UUID") }
            parentIdentifier = uuid
        } else {
            parentIdentifier = nil
        }
        var corners: [SIMD3<Double>] = []
        if let list = object["polygonCorners"] as? [Any] {
            guard list.count <= CapturedRoom.maximumElements else { throw fail("polygonCorners: too many corners") }
            for (index, corner) in list.enumerated() {
                let xyz = try Self.numbers(corner, count: 3, fail("polygonCorners[\(index)]"))
                corners.append(SIMD3(xyz[0], xyz[1], xyz[2]))
            }
        }
        polygonCorners = corners
    }

    private static func oneKey(_ value: Any?, _ error: RoomScanError) throws -> (String, [String: Any]) {
        guard let object = value as? [String: Any], object.count == 1, let only = object.first else { throw error }
        return (only.key, only.value as? [String: Any] ?? [:])
    }

    private static func numbers(_ value: Any?, count: Int, _ error: RoomScanError) throws -> [Double] {
        guard let list = value as? [Any] else { throw RoomScanError(error.code, "\(error.reason): expected \(count) numbers") }
        let numbers = list.compactMap { ($0 as? NSNumber)?.doubleValue }
        guard list.count == count, numbers.count == count else {
            throw RoomScanError(error.code, "\(error.reason): expected \(count) numbers, found \(list.count) values")
        }
        guard numbers.allSatisfy(\.isFinite) else { throw RoomScanError(error.code, "\(error.reason): not finite") }
        return numbers
    }
}

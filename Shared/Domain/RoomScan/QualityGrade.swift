/// The A/B/C quality grade of a scan (CrowdRoom §7.3): four dimensions, each graded on its
/// own; the scan's grade is the worst one. Rules, not a model.
public struct QualityGrade: Sendable, Equatable {
    /// A is best; comparison orders A < B < C, so the worst grade is the maximum.
    public enum Grade: String, Sendable, Comparable {
        case a = "A", b = "B", c = "C"
        public static func < (lhs: Grade, rhs: Grade) -> Bool { lhs.rawValue < rhs.rawValue }
    }

    /// One graded dimension with the value it was graded on.
    public struct Dimension: Sendable, Equatable {
        public let name: String
        /// nil when the dimension was skipped (its input is absent).
        public let grade: Grade?
        public let value: Double?
        /// What the value means and, when skipped, why.
        public let note: String
    }

    public let grade: Grade
    public let dimensions: [Dimension]

    /// Wall endpoints closer than this (metres, on the floor plane) are joined.
    public static let loopTolerance = 0.15

    /// Grades a scan from its CapturedRoom and the optional scan duration sent with the upload.
    public init(room: CapturedRoom, durationSeconds: Double?) {
        let highShare = room.walls.isEmpty ? 0 : Double(room.walls.filter { $0.confidence == .high }.count) / Double(room.walls.count)
        let confidence = Dimension(name: "wallConfidence", grade: highShare >= 0.9 ? .a : highShare >= 0.7 ? .b : .c,
                                   value: highShare, note: "share of walls with high confidence")
        let objectCount = room.objects.count
        let objects = Dimension(name: "objectCount", grade: objectCount >= 5 ? .a : objectCount >= 2 ? .b : .c,
                                value: Double(objectCount), note: "objects recognised")
        let freeEnds = QualityGrade.freeWallEnds(room.walls)
        let closed = room.walls.count >= 3 && freeEnds == 0
        let loop = Dimension(name: "wallLoopClosed", grade: closed ? .a : .c, value: closed ? 1 : 0,
                             note: closed ? "the walls close into a loop"
                                 : room.walls.count < 3 ? "fewer than 3 walls" : "\(freeEnds) wall ends join no other wall")
        let duration: Dimension
        if let seconds = durationSeconds, seconds.isFinite, seconds >= 0 {
            duration = Dimension(name: "scanDuration", grade: seconds >= 300 ? .a : seconds >= 180 ? .b : .c,
                                 value: seconds, note: "scan duration in seconds")
        } else {
            duration = Dimension(name: "scanDuration", grade: nil, value: nil,
                                 note: "skipped: the upload sent no scan.durationSeconds")
        }
        dimensions = [confidence, objects, loop, duration]
        grade = dimensions.compactMap(\.grade).max() ?? .c
    }

    /// Wall ends (each wall's two endpoints along its local x axis, on the floor plane)
    /// that lie within `loopTolerance` of no other wall's end.
    static func freeWallEnds(_ walls: [CapturedRoom.Element]) -> Int {
        let ends: [(wall: Int, point: SIMD2<Double>)] = walls.enumerated().flatMap { index, wall in
            let half = wall.xAxis * (wall.dimensions.x / 2)
            let a = wall.center - half, b = wall.center + half
            return [(index, SIMD2(a.x, a.z)), (index, SIMD2(b.x, b.z))]
        }
        return ends.filter { end in
            !ends.contains { other in
                other.wall != end.wall && ((other.point - end.point) * (other.point - end.point)).sum()
                    <= loopTolerance * loopTolerance
            }
        }.count
    }
}

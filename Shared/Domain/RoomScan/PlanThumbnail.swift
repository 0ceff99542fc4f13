/// The top-down plan of a room drawn from its CapturedRoom: walls as thick lines, doors,
/// windows and openings cut into them, objects as labelled rectangles. The floor plane is
/// x–z; the plan is north-up with room −z at the top and +x to the right, fitted with a
/// margin.
public enum PlanThumbnail {
    public static let size = 512
    static let margin = 36.0
    static let background = SIMD3<UInt8>(250, 249, 246)
    static let wallColor = SIMD3<UInt8>(40, 44, 52)
    static let doorColor = SIMD3<UInt8>(196, 120, 52)
    static let windowColor = SIMD3<UInt8>(90, 160, 220)
    static let objectColor = SIMD3<UInt8>(70, 120, 90)
    static let labelColor = SIMD3<UInt8>(30, 30, 30)

    /// The two floor-plane ends of an element along its local x axis.
    static func ends(_ element: CapturedRoom.Element) -> (SIMD2<Double>, SIMD2<Double>) {
        let half = element.xAxis * (element.dimensions.x / 2)
        let a = element.center - half, b = element.center + half
        return (SIMD2(a.x, a.z), SIMD2(b.x, b.z))
    }

    /// The four floor-plane corners of an object's footprint.
    static func footprint(_ element: CapturedRoom.Element) -> [SIMD2<Double>] {
        let x = element.xAxis * (element.dimensions.x / 2), z = element.zAxis * (element.dimensions.z / 2)
        let c = element.center
        return [c - x - z, c + x - z, c + x + z, c - x + z].map { SIMD2($0.x, $0.z) }
    }

    public static func render(_ room: CapturedRoom) -> RasterImage {
        var image = RasterImage(width: size, height: size, background: background)
        var points: [SIMD2<Double>] = []
        for element in room.walls + room.doors + room.windows + room.openings {
            let (a, b) = ends(element)
            points += [a, b]
        }
        for element in room.objects { points += footprint(element) }
        for floor in room.floors { points += footprint(floor) }
        points = points.filter { $0.x.isFinite && $0.y.isFinite }
        guard let first = points.first else { return image }
        var low = first, high = first
        for p in points {
            low = pointwiseMin(low, p)
            high = pointwiseMax(high, p)
        }
        let span = Swift.max(high.x - low.x, high.y - low.y, 0.5)
        let scale = (Double(size) - 2 * margin) / span
        let center = (low + high) / 2
        func pixel(_ p: SIMD2<Double>) -> SIMD2<Double> {
            SIMD2(Double(size) / 2 + (p.x - center.x) * scale, Double(size) / 2 + (p.y - center.y) * scale)
        }
        let wallThickness = Swift.max(3, Swift.min(10, 0.12 * scale))
        for wall in room.walls {
            let (a, b) = ends(wall)
            image.line(pixel(a), pixel(b), thickness: wallThickness, wallColor)
        }
        for (elements, color) in [(room.openings, background), (room.doors, doorColor), (room.windows, windowColor)] {
            for element in elements {
                let (a, b) = ends(element)
                image.line(pixel(a), pixel(b), thickness: wallThickness + 2, background)
                if color != background { image.line(pixel(a), pixel(b), thickness: Swift.max(2, wallThickness / 3), color) }
            }
        }
        let fontScale = scale > 60 ? 2 : 1
        for object in room.objects {
            let corners = footprint(object).map(pixel)
            for k in 0..<4 { image.line(corners[k], corners[(k + 1) % 4], thickness: 2, objectColor) }
            let c = pixel(SIMD2(object.center.x, object.center.z))
            image.text(object.category, centeredAt: c.x, c.y, scale: fontScale, labelColor)
        }
        return image
    }
}

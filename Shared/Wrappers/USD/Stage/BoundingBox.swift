/// An axis-aligned box; empty when `min > max`.
public struct BoundingBox: Sendable, Equatable {
    public var min: SIMD3<Double>
    public var max: SIMD3<Double>

    public static let empty = BoundingBox(min: SIMD3(repeating: .infinity), max: SIMD3(repeating: -.infinity))

    public init(min: SIMD3<Double>, max: SIMD3<Double>) {
        self.min = min
        self.max = max
    }

    public var isEmpty: Bool { min.x > max.x || min.y > max.y || min.z > max.z }

    public mutating func formUnion(_ other: BoundingBox) {
        guard !other.isEmpty else { return }
        min = pointwiseMin(min, other.min)
        max = pointwiseMax(max, other.max)
    }

    public mutating func include(_ point: SIMD3<Double>) {
        min = pointwiseMin(min, point)
        max = pointwiseMax(max, point)
    }

    /// The axis-aligned box around this box's eight corners after `matrix`.
    public func transformed(by matrix: Matrix4) -> BoundingBox {
        guard !isEmpty else { return self }
        var result = BoundingBox.empty
        for corner in 0..<8 {
            let p = SIMD3(corner & 1 == 0 ? min.x : max.x, corner & 2 == 0 ? min.y : max.y, corner & 4 == 0 ? min.z : max.z)
            result.include(matrix.transform(p))
        }
        return result
    }
}

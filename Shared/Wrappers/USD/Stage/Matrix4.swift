import Foundation

/// A 4×4 double matrix in USD's convention: row-major, row vectors (`p' = p · M`), so a
/// child's world matrix is `local · parentWorld`.
public struct Matrix4: Sendable, Equatable {
    public var m: SIMD16<Double>

    public static let identity = Matrix4(diagonal: 1, 1, 1)

    public init(_ values: SIMD16<Double>) { m = values }

    public init?(rowMajor values: [Double]) {
        guard values.count == 16 else { return nil }
        var simd = SIMD16<Double>()
        for i in 0..<16 { simd[i] = values[i] }
        m = simd
    }

    public init(diagonal x: Double, _ y: Double, _ z: Double) {
        var simd = SIMD16<Double>()
        simd[0] = x; simd[5] = y; simd[10] = z; simd[15] = 1
        m = simd
    }

    public subscript(row: Int, column: Int) -> Double {
        get { m[row * 4 + column] }
        set { m[row * 4 + column] = newValue }
    }

    public static func translation(_ x: Double, _ y: Double, _ z: Double) -> Matrix4 {
        var result = identity
        result[3, 0] = x; result[3, 1] = y; result[3, 2] = z
        return result
    }

    /// Rotation about one axis (0 = X, 1 = Y, 2 = Z) by `degrees`, for row vectors.
    public static func rotation(axis: Int, degrees: Double) -> Matrix4 {
        let radians = degrees * .pi / 180
        let c = cos(radians), s = sin(radians)
        var result = identity
        switch axis {
        case 0: result[1, 1] = c; result[1, 2] = s; result[2, 1] = -s; result[2, 2] = c
        case 1: result[0, 0] = c; result[0, 2] = -s; result[2, 0] = s; result[2, 2] = c
        default: result[0, 0] = c; result[0, 1] = s; result[1, 0] = -s; result[1, 1] = c
        }
        return result
    }

    /// Rotation from a quaternion given as (real, i, j, k); normalised first.
    public static func rotation(quaternion q: [Double]) -> Matrix4 {
        guard q.count == 4 else { return identity }
        let length = (q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]).squareRoot()
        guard length > 0 else { return identity }
        let w = q[0] / length, x = q[1] / length, y = q[2] / length, z = q[3] / length
        var result = identity
        result[0, 0] = 1 - 2 * (y * y + z * z); result[0, 1] = 2 * (x * y + z * w); result[0, 2] = 2 * (x * z - y * w)
        result[1, 0] = 2 * (x * y - z * w); result[1, 1] = 1 - 2 * (x * x + z * z); result[1, 2] = 2 * (y * z + x * w)
        result[2, 0] = 2 * (x * z + y * w); result[2, 1] = 2 * (y * z - x * w); result[2, 2] = 1 - 2 * (x * x + y * y)
        return result
    }

    public static func * (lhs: Matrix4, rhs: Matrix4) -> Matrix4 {
        var result = SIMD16<Double>()
        for row in 0..<4 {
            for column in 0..<4 {
                var sum = 0.0
                for k in 0..<4 { sum += lhs.m[row * 4 + k] * rhs.m[k * 4 + column] }
                result[row * 4 + column] = sum
            }
        }
        return Matrix4(result)
    }

    /// The point `(x, y, z, 1) · M`, divided by w when w is not 1.
    public func transform(_ p: SIMD3<Double>) -> SIMD3<Double> {
        var out = SIMD3<Double>(m[12], m[13], m[14])
        var w = m[15]
        for k in 0..<3 {
            out[0] += p[k] * m[k * 4]
            out[1] += p[k] * m[k * 4 + 1]
            out[2] += p[k] * m[k * 4 + 2]
            w += p[k] * m[k * 4 + 3]
        }
        return w != 1 && w != 0 ? out / w : out
    }

    /// The inverse, or nil for a singular matrix (Gauss–Jordan with partial pivoting).
    public var inverse: Matrix4? {
        var a = self
        var inv = Matrix4.identity
        for column in 0..<4 {
            var pivot = column
            for row in column..<4 where abs(a[row, column]) > abs(a[pivot, column]) { pivot = row }
            guard abs(a[pivot, column]) > 1e-300 else { return nil }
            if pivot != column {
                for k in 0..<4 {
                    a.m.swapAt(pivot * 4 + k, column * 4 + k)
                    inv.m.swapAt(pivot * 4 + k, column * 4 + k)
                }
            }
            let scale = 1 / a[column, column]
            for k in 0..<4 { a[column, k] *= scale; inv[column, k] *= scale }
            for row in 0..<4 where row != column {
                let factor = a[row, column]
                if factor == 0 { continue }
                for k in 0..<4 {
                    a[row, k] -= factor * a[column, k]
                    inv[row, k] -= factor * inv[column, k]
                }
            }
        }
        return inv
    }
}

extension SIMD16 {
    fileprivate mutating func swapAt(_ i: Int, _ j: Int) {
        let t = self[i]; self[i] = self[j]; self[j] = t
    }
}

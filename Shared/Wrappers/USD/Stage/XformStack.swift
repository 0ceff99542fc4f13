/// Evaluates a prim's `xformOpOrder` into its local matrix.
enum XformStack {
    /// Returns the local matrix and whether the stack resets the parent transform.
    /// Unknown ops and missing values are reported through `problem`.
    static func evaluate(order: [String], value: (String) -> USDValue?,
                         problem: (String) -> Void) -> (matrix: Matrix4, resets: Bool) {
        var resets = false
        var ops = order[...]
        if let reset = ops.lastIndex(of: "!resetXformStack!") {
            resets = true
            ops = ops[(reset + 1)...]
        }
        var matrix = Matrix4.identity
        // p' = p · op[n-1] · … · op[0]: later ops are applied first.
        for name in ops.reversed() {
            var attribute = name
            var invert = false
            if attribute.hasPrefix("!invert!") {
                invert = true
                attribute = String(attribute.dropFirst("!invert!".count))
            }
            guard let op = opMatrix(attribute, value: value(attribute), problem: problem) else { continue }
            if invert {
                guard let inverse = op.inverse else {
                    problem("singular op '\(attribute)' cannot be inverted")
                    continue
                }
                matrix = matrix * inverse
            } else {
                matrix = matrix * op
            }
        }
        return (matrix, resets)
    }

    private static func opMatrix(_ attribute: String, value: USDValue?, problem: (String) -> Void) -> Matrix4? {
        let parts = attribute.split(separator: ":")
        guard parts.count >= 2, parts[0] == "xformOp" else {
            problem("'\(attribute)' in xformOpOrder is not an xformOp")
            return nil
        }
        guard let values = value?.asNumbers else {
            problem("xformOp '\(attribute)' has no value")
            return nil
        }
        let kind = parts[1]
        func need(_ count: Int) -> Bool {
            if values.count == count { return true }
            problem("xformOp '\(attribute)' has \(values.count) values, expected \(count)")
            return false
        }
        switch kind {
        case "translate":
            return need(3) ? .translation(values[0], values[1], values[2]) : nil
        case "scale":
            return need(3) ? Matrix4(diagonal: values[0], values[1], values[2]) : nil
        case "rotateX", "rotateY", "rotateZ":
            guard need(1) else { return nil }
            return .rotation(axis: kind == "rotateX" ? 0 : kind == "rotateY" ? 1 : 2, degrees: values[0])
        case "rotateXYZ", "rotateXZY", "rotateYXZ", "rotateYZX", "rotateZXY", "rotateZYX":
            guard need(3) else { return nil }
            // The name lists the axes in the order they apply; angles are given as (x, y, z).
            var result = Matrix4.identity
            for letter in kind.dropFirst("rotate".count) {
                let axis = letter == "X" ? 0 : letter == "Y" ? 1 : 2
                result = result * .rotation(axis: axis, degrees: values[axis])
            }
            return result
        case "orient":
            return need(4) ? .rotation(quaternion: values) : nil
        case "transform":
            guard need(16) else { return nil }
            return Matrix4(rowMajor: values)
        default:
            problem("unknown xformOp type '\(kind)'")
            return nil
        }
    }
}

/// Unpacks crate value representations (`ValueRep`: bit 63 array, 62 inlined,
/// 61 compressed, bits 48–55 type, low 48 bits payload) into `USDValue`s.
struct CrateValueReader {
    let file: CrateFile
    let arrays: CrateArrayDecoder
    /// Decoded token arrays by rep: the crate stores identical arrays once (every Xform's
    /// `xformOpOrder`), so here they share one array too.
    private let tokenArrays = TokenArrayCache()

    private final class TokenArrayCache {
        var arrays: [UInt64: [String]] = [:]
    }

    init(file: CrateFile) {
        self.file = file
        arrays = CrateArrayDecoder(bytes: file.bytes, range: file.range, version: file.version, identifier: file.identifier)
    }

    enum Scalar { case bool, uchar, int32, uint32, int64, uint64, half, float, double }

    /// Numeric element layout by crate type number: scalar kind and component count.
    static func numericLayout(_ type: Int) -> (Scalar, Int)? {
        switch type {
        case 1: (.bool, 1)
        case 2: (.uchar, 1)
        case 3: (.int32, 1)
        case 4: (.uint32, 1)
        case 5: (.int64, 1)
        case 6: (.uint64, 1)
        case 7: (.half, 1)
        case 8: (.float, 1)
        case 9, 56: (.double, 1)
        case 13: (.double, 4)
        case 14: (.double, 9)
        case 15: (.double, 16)
        case 16: (.double, 4)
        case 17: (.float, 4)
        case 18: (.half, 4)
        case 19: (.double, 2)
        case 20: (.float, 2)
        case 21: (.half, 2)
        case 22: (.int32, 2)
        case 23: (.double, 3)
        case 24: (.float, 3)
        case 25: (.half, 3)
        case 26: (.int32, 3)
        case 27: (.double, 4)
        case 28: (.float, 4)
        case 29: (.half, 4)
        case 30: (.int32, 4)
        default: nil
        }
    }

    static func size(_ scalar: Scalar) -> Int {
        switch scalar {
        case .bool, .uchar: 1
        case .half: 2
        case .int32, .uint32, .float: 4
        case .int64, .uint64, .double: 8
        }
    }

    private var reader: ByteReader {
        ByteReader(file.bytes, start: file.range.lowerBound, end: file.range.upperBound, context: file.identifier)
    }

    private func position(_ payload: UInt64) throws -> ByteReader {
        var r = reader
        guard payload <= UInt64(file.range.count) else { throw r.error(.truncated, "value offset \(payload) is outside the layer") }
        try r.seek(file.range.lowerBound + Int(payload))
        return r
    }

    /// Whether a rep decodes without the path table (and so can be kept and decoded again
    /// after the layer is read): not a path, path vector, path list op, dictionary or time
    /// samples, and no bits set outside the rep layout.
    static func decodesWithoutPaths(_ rep: UInt64) -> Bool {
        guard rep & (0x1F << 56) == 0 else { return false }
        switch Int((rep >> 48) & 0xFF) {
        case 31, 34, 40, 46: return false
        default: return true
        }
    }

    /// Decodes one rep; `depth` bounds values that contain values (dictionaries, samples).
    func value(_ rep: UInt64, depth: Int = 0) throws -> USDValue {
        guard depth < 16 else { throw USDError(.corruptCrate, "values nested too deeply", context: file.identifier) }
        let isArray = rep & (1 << 63) != 0
        let inlined = rep & (1 << 62) != 0
        let type = Int((rep >> 48) & 0xFF)
        let payload = rep & 0xFFFF_FFFF_FFFF
        let small = UInt32(truncatingIfNeeded: payload)

        if let (scalar, components) = CrateValueReader.numericLayout(type) {
            if isArray {
                // Checked now (a corrupt array fails the layer), decoded again when asked.
                _ = try arrays.numbers(rep)
                return .lazyNumbers(LazyNumbers(crate: arrays, rep: rep))
            }
            if inlined { return inlineNumeric(small, scalar: scalar, components: components, type: type) }
            var r = try position(payload)
            var values = try (0..<components).map { _ in try read(scalar, &r) }
            if (16...18).contains(type) { values = [values[3], values[0], values[1], values[2]] }
            return components == 1 ? .number(values[0]) : .numbers(values)
        }
        switch type {
        case 10: // string
            if isArray { return .strings(try indexArray(payload).map(string)) }
            return .string(try string(Int(small)))
        case 11: // token
            if isArray {
                if let shared = tokenArrays.arrays[rep] { return .strings(shared) }
                let decoded = try indexArray(payload).map(token)
                if tokenArrays.arrays.count < 4096 { tokenArrays.arrays[rep] = decoded }
                return .strings(decoded)
            }
            return .string(try token(Int(small)))
        case 12: // asset path: inlined as a token, in arrays as strings
            if isArray { return .assets(try indexArray(payload).map(string)) }
            return .asset(try token(Int(small)))
        case 31:
            guard !inlined else { return .dictionary([:]) }
            var r = try position(payload)
            return .dictionary(try dictionary(&r, depth: depth))
        case 41, 50: // token vector, string vector
            if inlined { return .strings([]) }
            let indexes = try indexArray(payload, wide: true)
            return .strings(try indexes.map(type == 41 ? token : string))
        case 40: // path vector
            if inlined { return .paths([]) }
            return .paths(try indexArray(payload, wide: true).map(path))
        case 48: // double vector
            var r = try position(payload)
            let count = try r.readCount(elementSize: 8)
            return .numbers(try (0..<count).map { _ in try r.readDouble() })
        case 42, 43, 44: // specifier, permission, variability
            return .number(Double(small))
        case 32, 33: // token / string list op
            var r = try position(payload)
            let op = try listOp(&r) { r in try (type == 32 ? token : string)(Int(try r.read(UInt32.self))) }
            return .strings(op.items)
        case 34: // path list op
            var r = try position(payload)
            return .paths(try listOp(&r) { r in try path(Int(try r.read(UInt32.self))) }.items)
        case 46:
            return try firstTimeSample(payload, depth: depth)
        case 51:
            return .none
        default:
            return .none
        }
    }

    /// Composition arcs of a reference (35), payload (47) or payload list op (55) field.
    func arcs(_ rep: UInt64) throws -> ListOp<CompositionArc> {
        let type = Int((rep >> 48) & 0xFF)
        var r = try position(rep & 0xFFFF_FFFF_FFFF)
        let withOffset = type == 35 || file.version >= CrateFile.Version(major: 0, minor: 8, patch: 0)
        let readArc: (inout ByteReader) throws -> CompositionArc = { r in
            let asset = try string(Int(try r.read(UInt32.self)))
            let prim = try path(Int(try r.read(UInt32.self)))
            if withOffset { try r.skip(16) }
            if type == 35 { _ = try dictionary(&r, depth: 1) }
            return CompositionArc(assetPath: asset.isEmpty ? nil : asset, primPath: prim.isEmpty ? nil : prim)
        }
        if type == 47 { return ListOp(explicit: [try readArc(&r)]) }
        guard type == 35 || type == 55 else { return ListOp() }
        return try listOp(&r, readArc)
    }

    private func listOp<T>(_ r: inout ByteReader, _ item: (inout ByteReader) throws -> T) throws -> ListOp<T> {
        let bits = try r.read(UInt8.self)
        var op = ListOp<T>()
        func items(_ r: inout ByteReader) throws -> [T] {
            let count = try r.readCount(elementSize: 4)
            return try (0..<count).map { _ in try item(&r) }
        }
        if bits & 1 != 0 { op.explicit = [] }
        if bits & 2 != 0 { op.explicit = try items(&r) }
        if bits & 4 != 0 { op.added = try items(&r) }
        if bits & 32 != 0 { op.prepended = try items(&r) }
        if bits & 64 != 0 { op.appended = try items(&r) }
        if bits & 8 != 0 { op.deleted = try items(&r) }
        if bits & 16 != 0 { _ = try items(&r) } // ordered items
        return op
    }

    private func dictionary(_ r: inout ByteReader, depth: Int) throws -> [String: USDValue] {
        let count = try r.readCount(elementSize: 12)
        var result: [String: USDValue] = [:]
        for _ in 0..<count {
            let key = try string(Int(try r.read(UInt32.self)))
            let start = r.offset
            let jump = try r.read(Int64.self)
            guard jump >= 0 || jump > Int64(r.start - start) else { throw r.error(.corruptCrate, "bad dictionary value offset") }
            try r.seek(start + Int(jump))
            let rep = try r.read(UInt64.self)
            result[key] = try value(rep, depth: depth + 1)
        }
        return result
    }

    private func firstTimeSample(_ payload: UInt64, depth: Int) throws -> USDValue {
        var r = try position(payload)
        let start = r.offset
        try r.seek(start + Int(clamping: try r.read(Int64.self)))
        let timesRep = try r.read(UInt64.self)
        let second = r.offset
        try r.seek(second + Int(clamping: try r.read(Int64.self)))
        let count = try r.readCount(elementSize: 8)
        guard count > 0 else { return .none }
        let times = try value(timesRep, depth: depth + 1).asNumbers ?? []
        var best = 0
        for (index, time) in times.enumerated() where index < count && time < times[best] { best = index }
        let rep = try r.load(UInt64.self, at: r.offset + best * 8)
        return try value(rep, depth: depth + 1)
    }

    private func indexArray(_ payload: UInt64, wide: Bool = false) throws -> [Int] {
        guard payload != 0 else { return [] }
        var r = try position(payload)
        if !wide, file.version < CrateFile.Version(major: 0, minor: 5, patch: 0) { try r.skip(4) }
        let count = try r.readCount(elementSize: 4, wide: wide || file.version >= CrateFile.Version(major: 0, minor: 7, patch: 0))
        return try (0..<count).map { _ in Int(try r.read(UInt32.self)) }
    }

    private func read(_ scalar: Scalar, _ r: inout ByteReader) throws -> Double {
        try CrateValueReader.read(scalar, &r)
    }

    static func read(_ scalar: Scalar, _ r: inout ByteReader) throws -> Double {
        switch scalar {
        case .bool, .uchar: Double(try r.read(UInt8.self))
        case .int32: Double(try r.read(Int32.self))
        case .uint32: Double(try r.read(UInt32.self))
        case .int64: Double(try r.read(Int64.self))
        case .uint64: Double(try r.read(UInt64.self))
        case .half: CrateValueReader.half(try r.read(UInt16.self))
        case .float: Double(try r.readFloat())
        case .double: try r.readDouble()
        }
    }

    private func inlineNumeric(_ bits: UInt32, scalar: Scalar, components: Int, type: Int) -> USDValue {
        if components == 1 {
            switch scalar {
            case .bool, .uchar: return .number(Double(bits & 0xFF))
            case .int32: return .number(Double(Int32(bitPattern: bits)))
            case .uint32: return .number(Double(bits))
            case .int64: return .number(Double(Int32(bitPattern: bits)))
            case .uint64: return .number(Double(bits))
            case .half: return .number(CrateValueReader.half(UInt16(truncatingIfNeeded: bits)))
            case .float, .double: return .number(Double(Float(bitPattern: bits))) // doubles inline as floats
            }
        }
        let bytes = (0..<4).map { Double(Int8(bitPattern: UInt8(truncatingIfNeeded: bits >> (8 * UInt32($0))))) }
        if (13...15).contains(type) { // matrices inline their diagonal
            let n = type == 13 ? 2 : type == 14 ? 3 : 4
            var values = [Double](repeating: 0, count: n * n)
            for i in 0..<n { values[i * n + i] = bytes[i] }
            return .numbers(values)
        }
        var values = Array(bytes.prefix(components))
        if (16...18).contains(type) { values = [values[3], values[0], values[1], values[2]] }
        return .numbers(values)
    }

    static func half(_ bits: UInt16) -> Double {
        let sign = bits & 0x8000 != 0 ? -1.0 : 1.0
        let exponent = Int((bits >> 10) & 0x1F)
        let fraction = Double(bits & 0x3FF)
        switch exponent {
        case 0: return sign * fraction * 0x1p-24
        case 31: return fraction == 0 ? sign * .infinity : .nan
        default: return sign * (1 + fraction / 1024) * Double(sign: .plus, exponent: exponent - 15, significand: 1)
        }
    }

    func token(_ index: Int) throws -> String {
        guard index >= 0, index < file.tokens.count else { throw USDError(.corruptCrate, "token index \(index) out of range", context: file.identifier) }
        return file.tokens[index]
    }

    func string(_ index: Int) throws -> String {
        guard index >= 0, index < file.strings.count else { throw USDError(.corruptCrate, "string index \(index) out of range", context: file.identifier) }
        return try token(file.strings[index])
    }

    func path(_ index: Int) throws -> String {
        guard index >= 0, index < file.paths.count else { throw USDError(.corruptCrate, "path index \(index) out of range", context: file.identifier) }
        return try file.path(index)
    }
}

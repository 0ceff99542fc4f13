/// Decodes numeric arrays of a crate layer on demand. Holds only the file bytes (shared with
/// the package, not copied) and the layer's window and version, so lazily kept arrays do not
/// keep the crate's tables alive.
final class CrateArrayDecoder: Sendable {
    let bytes: [UInt8]
    let range: Range<Int>
    let version: CrateFile.Version
    let identifier: String

    init(bytes: [UInt8], range: Range<Int>, version: CrateFile.Version, identifier: String) {
        self.bytes = bytes
        self.range = range
        self.version = version
        self.identifier = identifier
    }

    /// The numbers of an array value rep (numeric type with bit 63 set), flattened.
    func numbers(_ rep: UInt64) throws -> [Double] {
        let type = Int((rep >> 48) & 0xFF)
        guard let (scalar, components) = CrateValueReader.numericLayout(type) else { return [] }
        return try numericArray(rep & 0xFFFF_FFFF_FFFF, scalar: scalar, components: components,
                                compressed: rep & (1 << 61) != 0, isQuat: (16...18).contains(type))
    }

    private func position(_ payload: UInt64) throws -> ByteReader {
        var r = ByteReader(bytes, start: range.lowerBound, end: range.upperBound, context: identifier)
        guard payload <= UInt64(range.count) else { throw r.error(.truncated, "value offset \(payload) is outside the layer") }
        try r.seek(range.lowerBound + Int(payload))
        return r
    }

    private func numericArray(_ payload: UInt64, scalar: CrateValueReader.Scalar, components: Int, compressed: Bool, isQuat: Bool) throws -> [Double] {
        guard payload != 0 else { return [] }
        var r = try position(payload)
        if version < CrateFile.Version(major: 0, minor: 5, patch: 0) { try r.skip(4) }
        let wideCount = version >= CrateFile.Version(major: 0, minor: 7, patch: 0)
        let elementSize = CrateValueReader.size(scalar) * components
        if compressed, components == 1 {
            let raw: UInt64 = wideCount ? try r.read(UInt64.self) : UInt64(try r.read(UInt32.self))
            guard raw <= UInt64(r.remaining) * 1024 + 64, raw <= UInt64(Int32.max) else {
                throw r.error(.limitExceeded, "compressed array declares \(raw) elements")
            }
            let count = Int(raw)
            if count < 16 { return try (0..<count).map { _ in try CrateValueReader.read(scalar, &r) } }
            switch scalar {
            case .int32, .uint32, .int64, .uint64:
                let wide = scalar == .int64 || scalar == .uint64
                let ints = try CrateCompression.readInts(&r, count: count, wide: wide)
                return scalar == .uint32 ? ints.map { Double(UInt32(truncatingIfNeeded: $0)) } : ints.map { Double($0) }
            case .half, .float, .double:
                let code = try r.read(UInt8.self)
                if code == UInt8(ascii: "i") {
                    return try CrateCompression.readInts(&r, count: count, wide: false).map { Double($0) }
                }
                guard code == UInt8(ascii: "t") else { throw r.error(.corruptCrate, "unknown float array code \(code)") }
                let tableSize = try r.readCount(elementSize: CrateValueReader.size(scalar), wide: false)
                let table = try (0..<tableSize).map { _ in try CrateValueReader.read(scalar, &r) }
                let indexes = try CrateCompression.readInts(&r, count: count, wide: false)
                return try indexes.map { index in
                    let i = Int(UInt32(truncatingIfNeeded: index))
                    guard i < table.count else { throw r.error(.corruptCrate, "lookup index \(i) out of range") }
                    return table[i]
                }
            default:
                throw r.error(.corruptCrate, "compressed array of an uncompressible type")
            }
        }
        let count = try r.readCount(elementSize: elementSize, wide: wideCount)
        var values = [Double]()
        values.reserveCapacity(count * components)
        try r.check(r.offset, count * elementSize)
        if scalar == .float {
            bytes.withUnsafeBytes { raw in
                for i in 0..<(count * components) {
                    values.append(Double(Float(bitPattern: UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: r.offset + i * 4, as: UInt32.self)))))
                }
            }
        } else {
            for _ in 0..<(count * components) { values.append(try CrateValueReader.read(scalar, &r)) }
        }
        if isQuat {
            for base in stride(from: 0, to: values.count - 3, by: 4) {
                let real = values[base + 3]
                values[base + 3] = values[base + 2]; values[base + 2] = values[base + 1]; values[base + 1] = values[base]
                values[base] = real
            }
        }
        return values
    }
}

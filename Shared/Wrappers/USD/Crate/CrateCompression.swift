import CLZ4

/// The two compressions a crate file uses: LZ4 blocks wrapped in chunks (TfFastCompression)
/// and Sdf integer coding (common delta, 2-bit width codes, variable-width deltas).
enum CrateCompression {
    /// Largest output a single decompression may produce (guards hostile sizes).
    static let maxOutput = 1 << 31 - 1
    /// Most integers one compressed block may declare (32M: far beyond any room scan).
    static let maxIntegers = 1 << 25

    /// Decompresses a chunked LZ4 buffer into exactly `outputSize` bytes at most.
    static func decompress(_ input: ArraySlice<UInt8>, outputSize: Int, context: String) throws -> [UInt8] {
        guard outputSize >= 0, outputSize <= maxOutput else {
            throw USDError(.limitExceeded, "decompressed size \(outputSize) is too large", context: context)
        }
        guard let chunks = input.first else {
            throw USDError(.decompression, "empty compressed buffer", context: context)
        }
        var output = [UInt8](repeating: 0, count: outputSize)
        var produced = 0
        try input.withUnsafeBytes { source in
            try output.withUnsafeMutableBytes { destination in
                let base = source.baseAddress!
                let target = destination.baseAddress?.assumingMemoryBound(to: CChar.self)
                func block(at offset: Int, length: Int) throws {
                    guard length >= 0, offset + length <= source.count, length <= Int(Int32.max) else {
                        throw USDError(.decompression, "LZ4 block runs past its buffer", context: context)
                    }
                    let room = outputSize - produced
                    let written = LZ4_decompress_safe(
                        base.advanced(by: offset).assumingMemoryBound(to: CChar.self),
                        target.map { $0 + produced }, Int32(length), Int32(min(room, Int(Int32.max))))
                    guard written >= 0 else { throw USDError(.decompression, "LZ4 block is corrupt", context: context) }
                    produced += Int(written)
                }
                if chunks == 0 {
                    try block(at: 1, length: source.count - 1)
                } else {
                    var offset = 1
                    for _ in 0..<Int(chunks) {
                        guard offset + 4 <= source.count else {
                            throw USDError(.decompression, "LZ4 chunk header runs past its buffer", context: context)
                        }
                        let length = Int(Int32(littleEndian: source.loadUnaligned(fromByteOffset: offset, as: Int32.self)))
                        try block(at: offset + 4, length: length)
                        offset += 4 + length
                    }
                }
            }
        }
        if produced < outputSize { output.removeLast(outputSize - produced) }
        return output
    }

    /// Reads `uint64 compressedSize` + buffer at the reader and decodes `count` integers,
    /// stored as `T` (truncated: structural tables use 32-bit columns, half the memory).
    static func readInts<T: FixedWidthInteger>(_ reader: inout ByteReader, count: Int, wide: Bool,
                                               as type: T.Type = Int64.self) throws -> [T] {
        let compressedSize = try reader.read(UInt64.self)
        guard compressedSize <= UInt64(reader.remaining) else {
            throw reader.error(.truncated, "compressed integers declare \(compressedSize) bytes")
        }
        // Each integer takes at least 2 bits after decoding, and LZ4 expands at most ~255×.
        guard count >= 0, count <= Int(compressedSize) * 1024 + 64, count <= maxIntegers else {
            throw reader.error(.limitExceeded, "\(count) integers cannot come from \(compressedSize) compressed bytes")
        }
        let at = reader.offset
        let buffer = try reader.readBytes(Int(compressedSize))
        let width = wide ? 8 : 4
        let working = width + (count * 2 + 7) / 8 + count * width
        let decoded = try decompress(buffer, outputSize: working, context: "\(reader.context) offset \(at)")
        return try decodeInts(decoded, count: count, wide: wide, as: type, context: "\(reader.context) offset \(at)")
    }

    static func decodeInts<T: FixedWidthInteger>(_ data: [UInt8], count: Int, wide: Bool, as type: T.Type = Int64.self,
                                                 context: String) throws -> [T] {
        let width = wide ? 8 : 4
        let codeBytes = (count * 2 + 7) / 8
        guard data.count >= width + codeBytes else {
            throw USDError(.decompression, "integer block shorter than its codes", context: context)
        }
        var result = [T](repeating: 0, count: count)
        try data.withUnsafeBytes { raw in
            let common: Int64 = wide ? Int64(littleEndian: raw.loadUnaligned(as: Int64.self))
                : Int64(Int32(littleEndian: raw.loadUnaligned(as: Int32.self)))
            var codes = width
            var values = width + codeBytes
            var previous: Int64 = 0
            for index in 0..<count {
                let code = (raw[codes + index / 4] >> (2 * UInt8(index % 4))) & 3
                let size: Int
                switch code {
                case 0: size = 0
                case 1: size = wide ? 2 : 1
                case 2: size = wide ? 4 : 2
                default: size = wide ? 8 : 4
                }
                guard values + size <= raw.count else {
                    throw USDError(.decompression, "integer block ends early", context: context)
                }
                let delta: Int64
                switch size {
                case 0: delta = common
                case 1: delta = Int64(Int8(bitPattern: raw[values]))
                case 2: delta = Int64(Int16(littleEndian: raw.loadUnaligned(fromByteOffset: values, as: Int16.self)))
                case 4: delta = Int64(Int32(littleEndian: raw.loadUnaligned(fromByteOffset: values, as: Int32.self)))
                default: delta = Int64(littleEndian: raw.loadUnaligned(fromByteOffset: values, as: Int64.self))
                }
                values += size
                previous = wide ? previous &+ delta : Int64(Int32(truncatingIfNeeded: previous &+ delta))
                result[index] = T(truncatingIfNeeded: previous)
            }
            codes += codeBytes
        }
        return result
    }
}

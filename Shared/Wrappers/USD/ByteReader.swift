/// Bounds-checked little-endian reads over a byte buffer; every read that would leave the
/// buffer throws `USDError.truncated` naming the offset.
struct ByteReader {
    let bytes: [UInt8]
    /// Readable window `[start, end)` inside `bytes`.
    let start: Int
    let end: Int
    var offset: Int
    let context: String

    init(_ bytes: [UInt8], start: Int = 0, end: Int? = nil, context: String) {
        self.bytes = bytes
        self.start = start
        self.end = end ?? bytes.count
        self.offset = start
        self.context = context
    }

    var remaining: Int { end - offset }

    func error(_ code: USDError.Code, _ message: String, at position: Int? = nil) -> USDError {
        USDError(code, message, context: "\(context) offset \(position ?? offset)")
    }

    /// Throws unless `count` bytes are readable at `position`.
    func check(_ position: Int, _ count: Int) throws {
        guard count >= 0, position >= start, position <= end, count <= end - position else {
            throw error(.truncated, "need \(count) bytes, window ends at \(end)", at: position)
        }
    }

    mutating func seek(_ position: Int) throws {
        try check(position, 0)
        offset = position
    }

    mutating func skip(_ count: Int) throws {
        try check(offset, count)
        offset += count
    }

    func load<T: FixedWidthInteger>(_ type: T.Type, at position: Int) throws -> T {
        try check(position, MemoryLayout<T>.size)
        return bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: position, as: T.self)) }
    }

    mutating func read<T: FixedWidthInteger>(_ type: T.Type) throws -> T {
        let value = try load(type, at: offset)
        offset += MemoryLayout<T>.size
        return value
    }

    mutating func readFloat() throws -> Float { Float(bitPattern: try read(UInt32.self)) }
    mutating func readDouble() throws -> Double { Double(bitPattern: try read(UInt64.self)) }

    mutating func readBytes(_ count: Int) throws -> ArraySlice<UInt8> {
        try check(offset, count)
        defer { offset += count }
        return bytes[offset..<(offset + count)]
    }

    /// Reads a count and checks that `count * elementSize` bytes could follow.
    mutating func readCount(elementSize: Int, wide: Bool = true) throws -> Int {
        let raw: UInt64 = wide ? try read(UInt64.self) : UInt64(try read(UInt32.self))
        guard raw <= UInt64(Int32.max), Int(raw) <= remaining / max(elementSize, 1) else {
            throw error(.truncated, "declared count \(raw) does not fit the remaining \(remaining) bytes")
        }
        return Int(raw)
    }
}

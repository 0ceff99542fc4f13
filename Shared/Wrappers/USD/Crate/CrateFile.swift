/// The structural sections of a `.usdc` crate file: tokens, strings, fields, field sets,
/// paths and specs. Every declared count is checked against the bytes before allocating.
struct CrateFile {
    struct Version: Comparable, Sendable {
        let major: UInt8, minor: UInt8, patch: UInt8
        static func < (a: Version, b: Version) -> Bool {
            (a.major, a.minor, a.patch) < (b.major, b.minor, b.patch)
        }
        var text: String { "\(major).\(minor).\(patch)" }
    }

    struct Spec {
        private let rawPath: UInt32
        private let rawFieldSet: UInt32
        let type: UInt32
        var pathIndex: Int { Int(rawPath) }
        var fieldSetIndex: Int { Int(rawFieldSet) }

        init(pathIndex: UInt32, fieldSetIndex: UInt32, type: UInt32) {
            rawPath = pathIndex
            rawFieldSet = fieldSetIndex
            self.type = type
        }
    }

    /// Newest version whose layout this reader knows.
    static let newestSupported = Version(major: 0, minor: 14, patch: 0)
    static let oldestSupported = Version(major: 0, minor: 4, patch: 0)

    let bytes: [UInt8]
    let range: Range<Int>
    let identifier: String
    let version: Version
    var tokens: [String] = []
    var strings: [Int] = []
    var fieldTokens: [UInt32] = []
    var fieldReps: [UInt64] = []
    /// Field indexes of each field set, each set ending with 0xFFFF_FFFF.
    var fieldSets: [UInt32] = []
    /// One node of the path tree: parent path index and element token (negative for a
    /// property), so paths cost 12 bytes each instead of a string (see `path(_:)`).
    struct PathNode {
        static let root: Int32 = -1
        static let unassigned: Int32 = -2
        let parent: Int32
        let element: Int32
        /// Prim components (the root has 0; a property has its prim's).
        let depth: UInt16
        /// Some element is a variant selection (`{set=sel}`).
        let variant: Bool
        var isProperty: Bool { element < 0 }
    }

    /// The path tree by path index.
    var paths: [PathNode] = []
    var specs: [Spec] = []

    init(bytes: [UInt8], range: Range<Int>, identifier: String) throws {
        self.bytes = bytes
        self.range = range
        self.identifier = identifier
        var reader = ByteReader(bytes, start: range.lowerBound, end: range.upperBound, context: identifier)
        guard range.count >= 88, Array(bytes[range.lowerBound..<(range.lowerBound + 8)]) == Array("PXR-USDC".utf8) else {
            throw reader.error(.badMagic, "not a crate file (bootstrap missing)")
        }
        try reader.skip(8)
        version = Version(major: try reader.read(UInt8.self), minor: try reader.read(UInt8.self), patch: try reader.read(UInt8.self))
        guard version.major == 0, version >= CrateFile.oldestSupported, version <= CrateFile.newestSupported else {
            throw reader.error(.unsupportedVersion, "crate version \(version.text) is not supported (0.4.0 – \(CrateFile.newestSupported.text))", at: range.lowerBound + 8)
        }
        try reader.seek(range.lowerBound + 16)
        let tocOffset = try reader.read(Int64.self)
        guard tocOffset >= 0, tocOffset < Int64(range.count) else {
            throw reader.error(.truncated, "table of contents offset \(tocOffset) is outside the layer", at: range.lowerBound + 16)
        }
        try reader.seek(range.lowerBound + Int(tocOffset))
        let sectionCount = try reader.readCount(elementSize: 32)
        var sections: [String: (start: Int, size: Int)] = [:]
        for _ in 0..<sectionCount {
            let name = try reader.readBytes(16).prefix { $0 != 0 }
            let start = try reader.read(Int64.self)
            let size = try reader.read(Int64.self)
            guard start >= 0, size >= 0, start <= Int64(range.count), size <= Int64(range.count) - start else {
                throw reader.error(.truncated, "section '\(String(decoding: name, as: UTF8.self))' lies outside the layer")
            }
            sections[String(decoding: name, as: UTF8.self)] = (range.lowerBound + Int(start), Int(size))
        }
        func section(_ name: String) throws -> ByteReader {
            guard let found = sections[name] else {
                throw USDError(.corruptCrate, "missing \(name) section", context: identifier)
            }
            return ByteReader(bytes, start: found.start, end: found.start + found.size, context: "\(identifier) \(name)")
        }
        var tokenReader = try section("TOKENS")
        try readTokens(&tokenReader)
        var stringReader = try section("STRINGS")
        try readStrings(&stringReader)
        var fieldReader = try section("FIELDS")
        try readFields(&fieldReader)
        var fieldSetReader = try section("FIELDSETS")
        let fieldSetCount = try fieldSetReader.read(UInt64.self)
        fieldSets = try CrateCompression.readInts(&fieldSetReader, count: try checkedCount(fieldSetCount, fieldSetReader), wide: false,
                                                  as: UInt32.self)
        var pathReader = try section("PATHS")
        try readPaths(&pathReader)
        var specReader = try section("SPECS")
        try readSpecs(&specReader)
    }

    private func checkedCount(_ raw: UInt64, _ reader: ByteReader) throws -> Int {
        guard raw <= UInt64(reader.end - reader.start) * 1024 + 64, raw <= UInt64(Int32.max) else {
            throw reader.error(.limitExceeded, "declared count \(raw) is absurd for a \(reader.end - reader.start)-byte section")
        }
        return Int(raw)
    }

    private mutating func readTokens(_ reader: inout ByteReader) throws {
        let count = try checkedCount(try reader.read(UInt64.self), reader)
        let plainSize = try reader.read(UInt64.self)
        let compressedSize = try reader.read(UInt64.self)
        guard compressedSize <= UInt64(reader.remaining), plainSize <= compressedSize * 255 + 64 else {
            throw reader.error(.truncated, "token block declares \(compressedSize) → \(plainSize) bytes")
        }
        let plain = try CrateCompression.decompress(try reader.readBytes(Int(compressedSize)), outputSize: Int(plainSize),
                                                    context: reader.context)
        tokens.reserveCapacity(count)
        var start = 0
        for (index, byte) in plain.enumerated() where byte == 0 {
            if tokens.count == count { break }
            tokens.append(String(decoding: plain[start..<index], as: UTF8.self))
            start = index + 1
        }
        guard tokens.count == count else {
            throw reader.error(.corruptCrate, "expected \(count) tokens, found \(tokens.count)")
        }
    }

    private mutating func readStrings(_ reader: inout ByteReader) throws {
        let count = try reader.readCount(elementSize: 4)
        strings = try (0..<count).map { _ in Int(try reader.read(UInt32.self)) }
    }

    private mutating func readFields(_ reader: inout ByteReader) throws {
        let count = try checkedCount(try reader.read(UInt64.self), reader)
        fieldTokens = try CrateCompression.readInts(&reader, count: count, wide: false, as: UInt32.self)
        let repsSize = try reader.read(UInt64.self)
        guard repsSize <= UInt64(reader.remaining) else { throw reader.error(.truncated, "field values declare \(repsSize) bytes") }
        let plain = try CrateCompression.decompress(try reader.readBytes(Int(repsSize)), outputSize: count * 8, context: reader.context)
        guard plain.count == count * 8 else { throw reader.error(.corruptCrate, "field values are short") }
        fieldReps = plain.withUnsafeBytes { raw in (0..<count).map { UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: $0 * 8, as: UInt64.self)) } }
    }

    private mutating func readPaths(_ reader: inout ByteReader) throws {
        let pathCount = try checkedCount(try reader.read(UInt64.self), reader)
        let encoded = try checkedCount(try reader.read(UInt64.self), reader)
        let pathIndexes = try CrateCompression.readInts(&reader, count: encoded, wide: false, as: UInt32.self)
        let elements = try CrateCompression.readInts(&reader, count: encoded, wide: false, as: Int32.self)
        let jumps = try CrateCompression.readInts(&reader, count: encoded, wide: false, as: Int32.self)
        paths = [PathNode](repeating: PathNode(parent: PathNode.unassigned, element: 0, depth: 0, variant: false), count: pathCount)
        guard encoded > 0 else { return }
        // Depth-first rebuild: each item names its element; jump −2 leaf, −1 child next,
        // 0 sibling next, > 0 child next and sibling at index + jump.
        var pending: [(index: Int, parent: Int?)] = [(0, nil)]
        var visited = 0
        while let (first, parentPath) = pending.popLast() {
            var index = first
            var parent = parentPath
            while true {
                visited += 1
                guard index >= 0, index < encoded, visited <= encoded * 2 else {
                    throw USDError(.corruptCrate, "path tree jumps outside its \(encoded) items", context: reader.context)
                }
                let pathIndex = Int(pathIndexes[index])
                guard pathIndex < pathCount else { throw USDError(.corruptCrate, "path index \(pathIndex) out of range", context: reader.context) }
                if let parent {
                    let element = elements[index]
                    let tokenIndex = element.magnitude
                    guard tokenIndex < tokens.count else { throw USDError(.corruptCrate, "path element token out of range", context: reader.context) }
                    let above = paths[parent]
                    let variant = above.variant || tokens[Int(tokenIndex)].utf8.contains(UInt8(ascii: "{"))
                    let depth = element < 0 ? above.depth : above.depth &+ 1
                    paths[pathIndex] = PathNode(parent: Int32(parent), element: element, depth: depth, variant: variant)
                } else {
                    paths[pathIndex] = PathNode(parent: PathNode.root, element: 0, depth: 0, variant: false)
                }
                let jump = Int(jumps[index])
                let hasChild = jump > 0 || jump == -1
                let hasSibling = jump >= 0
                if hasChild {
                    if hasSibling { pending.append((index + jump, parent)) }
                    parent = pathIndex
                    index += 1
                } else if hasSibling {
                    index += 1
                } else {
                    break
                }
            }
        }
    }

    /// A copy keeping only what decoding values needs besides paths (bytes, tokens,
    /// strings), so the structural tables can be released once the layer is read.
    func valueTablesOnly() -> CrateFile {
        var copy = self
        copy.fieldTokens = []
        copy.fieldReps = []
        copy.fieldSets = []
        copy.paths = []
        copy.specs = []
        return copy
    }

    /// The path string (`/A/B`, `/A/B.attr`; "" for an index the tree never named).
    func path(_ index: Int) throws -> String {
        var names: [(name: String, isProperty: Bool)] = []
        var current = index
        while true {
            let node = paths[current]
            if node.parent == PathNode.unassigned { return names.isEmpty ? "" : "/" }
            if node.parent == PathNode.root { break }
            names.append((tokens[Int(node.element.magnitude)], node.element < 0))
            current = Int(node.parent)
            guard names.count <= 4096 else { throw USDError(.corruptCrate, "path \(index) loops", context: identifier) }
        }
        var result = "/"
        for (name, isProperty) in names.reversed() {
            result = isProperty ? result + "." + name : (result == "/" ? "/" + name : result + "/" + name)
        }
        return result
    }

    private mutating func readSpecs(_ reader: inout ByteReader) throws {
        let count = try checkedCount(try reader.read(UInt64.self), reader)
        let pathIndexes = try CrateCompression.readInts(&reader, count: count, wide: false, as: UInt32.self)
        let fieldSetIndexes = try CrateCompression.readInts(&reader, count: count, wide: false, as: UInt32.self)
        let types = try CrateCompression.readInts(&reader, count: count, wide: false, as: UInt32.self)
        specs = (0..<count).map { Spec(pathIndex: pathIndexes[$0], fieldSetIndex: fieldSetIndexes[$0], type: types[$0]) }
    }

    /// The (name, value rep) pairs of a spec's field set.
    func fields(of spec: Spec) throws -> [(name: String, rep: UInt64)] {
        var result: [(String, UInt64)] = []
        var index = spec.fieldSetIndex
        while index < fieldSets.count, fieldSets[index] != 0xFFFF_FFFF {
            let field = Int(fieldSets[index])
            guard field < fieldTokens.count, Int(fieldTokens[field]) < tokens.count else {
                throw USDError(.corruptCrate, "field \(field) out of range", context: identifier)
            }
            result.append((tokens[Int(fieldTokens[field])], fieldReps[field]))
            index += 1
            guard result.count < 10_000 else { throw USDError(.corruptCrate, "unterminated field set", context: identifier) }
        }
        return result
    }
}

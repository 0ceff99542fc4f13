/// Parses `.usda` values according to their declared type.
extension USDAParser {
    static let numericBaseTypes: Set<String> = [
        "bool", "uchar", "int", "uint", "int64", "uint64", "half", "float", "double", "timecode",
        "int2", "int3", "int4", "half2", "half3", "half4", "float2", "float3", "float4",
        "double2", "double3", "double4", "point3h", "point3f", "point3d", "normal3h", "normal3f", "normal3d",
        "vector3h", "vector3f", "vector3d", "color3h", "color3f", "color3d", "color4h", "color4f", "color4d",
        "texCoord2h", "texCoord2f", "texCoord2d", "texCoord3h", "texCoord3f", "texCoord3d",
        "quath", "quatf", "quatd", "matrix2d", "matrix3d", "matrix4d", "frame4d",
    ]

    /// Parses a value of `typeName` (with `[]` for arrays).
    mutating func value(ofType typeName: String) throws -> USDValue {
        let isArray = typeName.hasSuffix("[]")
        let base = isArray ? String(typeName.dropLast(2)) : typeName
        cursor.skipSpace()
        if cursor.peekIdentifier() == "None" {
            _ = cursor.identifier()
            return .none
        }
        if USDAParser.numericBaseTypes.contains(base) {
            if isArray {
                // Checked now (a malformed array fails the layer), parsed again when asked.
                let offset = cursor.position
                scratch.removeAll(keepingCapacity: true)
                try cursor.flatNumbers(into: &scratch, depth: 0)
                return .lazyNumbers(LazyNumbers(text: source, offset: offset))
            }
            var numbers: [Double] = []
            try cursor.flatNumbers(into: &numbers, depth: 0)
            if numbers.count == 1 { return .number(numbers[0]) }
            return .numbers(numbers)
        }
        switch base {
        case "string", "token":
            if isArray { return .strings(try stringList()) }
            guard let text = try cursor.string() else { throw cursor.error("expected a string") }
            return .string(text)
        case "asset":
            if isArray {
                try cursor.expect(91)
                var items: [String] = []
                while !cursor.consume(93) {
                    guard let item = try cursor.asset() else { throw cursor.error("expected an asset path") }
                    items.append(item)
                    _ = cursor.consume(44)
                }
                return .assets(items)
            }
            guard let item = try cursor.asset() else { throw cursor.error("expected an asset path") }
            return .asset(item)
        case "dictionary":
            return .dictionary(try dictionary(depth: 0))
        default:
            layer.noteUnsupported("attribute type '\(typeName)'")
            try cursor.skipBalanced()
            return .none
        }
    }

    mutating func stringList() throws -> [String] {
        try cursor.expect(91)
        var items: [String] = []
        while !cursor.consume(93) {
            if let text = try cursor.string() {
                items.append(intern(text))
            } else if let word = cursor.identifier() {
                items.append(intern(word))
            } else {
                throw cursor.error("expected a string, found \(cursor.describeNext())")
            }
            _ = cursor.consume(44)
        }
        return items
    }

    /// `{ type key = value … }` (customData and other dictionaries).
    mutating func dictionary(depth: Int) throws -> [String: USDValue] {
        guard depth < 32 else { throw cursor.error("dictionaries nested too deeply") }
        try cursor.expect(123)
        var result: [String: USDValue] = [:]
        while true {
            if cursor.consume(125) { return result }
            _ = cursor.consume(59)
            if cursor.consume(125) { return result }
            var type = try cursor.expectIdentifier()
            if cursor.consume(91) { try cursor.expect(93); type += "[]" }
            let key: String
            if let quoted = try cursor.string() { key = quoted } else { key = try cursor.expectIdentifier() }
            try cursor.expect(61)
            if type == "dictionary" {
                result[key] = .dictionary(try dictionary(depth: depth + 1))
            } else {
                result[key] = try value(ofType: type)
            }
        }
    }

    /// `@asset@</Prim> (offset = …)` items for references and payloads, or `None`.
    mutating func arcs() throws -> [CompositionArc] {
        cursor.skipSpace()
        if cursor.peekIdentifier() == "None" { _ = cursor.identifier(); return [] }
        var items: [CompositionArc] = []
        let isList = cursor.consume(91)
        while true {
            if isList, cursor.consume(93) { break }
            var arc = CompositionArc()
            if let asset = try cursor.asset() { arc.assetPath = asset }
            if let prim = try cursor.path() { arc.primPath = prim }
            if arc.assetPath == nil, arc.primPath == nil { throw cursor.error("expected a reference, found \(cursor.describeNext())") }
            cursor.skipSpace()
            if cursor.peek == 40 { try cursor.skipBalanced() } // layer offset / customData
            items.append(arc)
            if !isList { break }
            _ = cursor.consume(44)
        }
        return items
    }

    /// Relationship targets: `</a>`, `[</a>, </b>]` or `None`.
    mutating func targets() throws -> [String] {
        cursor.skipSpace()
        if cursor.peekIdentifier() == "None" { _ = cursor.identifier(); return [] }
        if let single = try cursor.path() { return [single] }
        try cursor.expect(91)
        var items: [String] = []
        while !cursor.consume(93) {
            guard let item = try cursor.path() else { throw cursor.error("expected a target path") }
            items.append(item)
            _ = cursor.consume(44)
        }
        return items
    }
}

extension USDACursor {
    /// Numbers, tuples and lists of them, flattened in order.
    mutating func flatNumbers(into numbers: inout [Double], depth: Int) throws {
        guard depth < 8 else { throw error("values nested too deeply") }
        skipSpace()
        let open = peek
        if open == 40 || open == 91 { // ( or [
            let close: UInt8 = open == 40 ? 41 : 93
            advance()
            if consume(close) { return }
            while true {
                try flatNumbers(into: &numbers, depth: depth + 1)
                if consume(44) {
                    if consume(close) { return } // trailing comma
                    continue
                }
                try expect(close)
                return
            }
        }
        numbers.append(try number())
    }

    /// The flattened numbers of the value at `offset` of a layer's text.
    static func numbers(in bytes: ArraySlice<UInt8>, name: String, at offset: Int) throws -> [Double] {
        var cursor = USDACursor(bytes, name: name, at: offset)
        var numbers: [Double] = []
        try cursor.flatNumbers(into: &numbers, depth: 0)
        return numbers
    }
}

/// Parses a `.usda` text layer into prim specs. Constructs it does not compose (variant sets,
/// sublayers, inherits, specializes, splines) are skipped and reported on the layer.
struct USDAParser {
    var cursor: USDACursor
    let layer: LayerData
    /// The layer's text, for numeric arrays parsed again when read.
    let source: USDATextSource
    /// Reused buffer for checking numeric arrays.
    var scratch: [Double] = []
    /// One copy of each attribute name and token-list item (most repeat on every prim).
    private var interned: [String: String] = [:]

    mutating func intern(_ text: String) -> String {
        if text.utf8.count <= 15 { return text } // stored inline anyway
        if let known = interned[text] { return known }
        if interned.count < 100_000 { interned[text] = text }
        return text
    }
    private static let maxPrimDepth = 256

    static func parse(_ bytes: ArraySlice<UInt8>, identifier: String) throws -> LayerData {
        guard bytes.starts(with: Array("#usda".utf8)) else {
            throw USDError(.badMagic, "a usda layer starts with '#usda'", context: "\(identifier) line 1")
        }
        let layer = LayerData(identifier: identifier, table: PrimTable(store: ValueStore()))
        var parser = USDAParser(cursor: USDACursor(bytes, name: identifier), layer: layer,
                                source: USDATextSource(bytes: bytes, identifier: identifier))
        try parser.parseLayer()
        layer.table.finishBuilding()
        return layer
    }

    private mutating func parseLayer() throws {
        cursor.skipSpace() // the header line reads as a comment
        if cursor.consume(40) { try layerMetadata() }
        while true {
            cursor.skipSpace()
            if cursor.atEnd { return }
            try primStatement(parent: 0, depth: 0)
        }
    }

    private mutating func layerMetadata() throws {
        while !cursor.consume(41) {
            if cursor.atEnd { throw cursor.error("unterminated layer metadata") }
            _ = cursor.consume(59)
            if try cursor.string() != nil { continue } // doc string
            var key = try cursor.expectIdentifier()
            if ["prepend", "append", "add", "delete", "reorder"].contains(key) { key = try cursor.expectIdentifier() }
            try cursor.expect(61)
            switch key {
            case "defaultPrim":
                layer.defaultPrim = try cursor.string() ?? cursor.identifier()
            case "upAxis":
                layer.upAxis = try cursor.string() ?? cursor.identifier()
            case "metersPerUnit":
                layer.metersPerUnit = try cursor.number()
            case "subLayers":
                layer.noteUnsupported("subLayers")
                try cursor.skipBalanced()
            default:
                try cursor.skipBalanced()
            }
        }
    }

    private var table: PrimTable { layer.table }

    private mutating func primStatement(parent: Int32, depth: Int) throws {
        guard depth < USDAParser.maxPrimDepth else { throw cursor.error("prims nested too deeply") }
        let word = try cursor.expectIdentifier()
        guard let specifier = Specifier(rawValue: word) else {
            throw cursor.error("expected def, over or class, found '\(word)'")
        }
        var typeName = ""
        if cursor.peek != 34, cursor.peek != 39, let type = cursor.identifier() { typeName = type }
        guard let name = try cursor.string() else { throw cursor.error("expected a prim name") }
        let spec = table.addChild(name, to: parent, specifier: specifier)
        table.setSpecifier(spec, specifier)
        if !typeName.isEmpty { table.setTypeName(spec, table.intern(typeName)) }
        if cursor.consume(40) { try primMetadata(spec) }
        try cursor.expect(123)
        try primBody(spec, depth: depth)
    }

    private mutating func primMetadata(_ spec: Int32) throws {
        while !cursor.consume(41) {
            if cursor.atEnd { throw cursor.error("unterminated prim metadata") }
            if cursor.consume(59) { continue }
            if try cursor.string() != nil { continue }
            var key = try cursor.expectIdentifier()
            var op = "explicit"
            if ["prepend", "append", "add", "delete", "reorder"].contains(key) {
                op = key
                key = try cursor.expectIdentifier()
            }
            try cursor.expect(61)
            switch key {
            case "references", "payload":
                let items = try arcs()
                var list = key == "references" ? table.references(spec) : table.payloads(spec)
                switch op {
                case "prepend": list.prepended = items
                case "append": list.appended = items
                case "add": list.added = items
                case "delete": list.deleted = items
                case "reorder": break
                default: list.explicit = items
                }
                if key == "references" { table.setReferences(spec, list) } else { table.setPayloads(spec, list) }
            case "kind":
                table.setKind(spec, try cursor.string() ?? cursor.identifier())
            case "active":
                table.setActive(spec, try cursor.number() != 0)
            case "customData":
                table.customData[spec] = try dictionary(depth: 0)
            case "inherits", "specializes", "variantSets", "variants", "relocates":
                layer.noteUnsupported("prim metadata '\(key)'")
                try cursor.skipBalanced()
            default:
                try cursor.skipBalanced()
            }
        }
    }

    private mutating func primBody(_ spec: Int32, depth: Int) throws {
        while true {
            cursor.skipSpace()
            if cursor.consume(125) { return }
            if cursor.atEnd { throw cursor.error("unterminated prim '\(table.name(spec))'") }
            if cursor.consume(59) { continue }
            guard let word = cursor.peekIdentifier() else {
                throw cursor.error("unexpected \(cursor.describeNext()) in prim '\(table.name(spec))'")
            }
            switch word {
            case "def", "over", "class":
                try primStatement(parent: spec, depth: depth + 1)
            case "variantSet":
                _ = cursor.identifier()
                layer.noteUnsupported("variantSet")
                _ = try cursor.string()
                try cursor.expect(61)
                try cursor.skipBalanced()
            case "reorder":
                _ = cursor.identifier()
                _ = cursor.identifier()
                try cursor.expect(61)
                try cursor.skipBalanced()
            default:
                try property(spec)
            }
        }
    }

    private mutating func property(_ spec: Int32) throws {
        var word = try cursor.expectIdentifier()
        var listOp = ""
        if ["prepend", "append", "add", "delete"].contains(word) {
            listOp = word
            word = try cursor.expectIdentifier()
        }
        if word == "custom" { word = try cursor.expectIdentifier() }
        if ["uniform", "varying", "config"].contains(word) { word = try cursor.expectIdentifier() }
        if word == "rel" {
            let name = try cursor.expectIdentifier()
            if cursor.consume(61) {
                let paths = try targets()
                var relationships = table.relationships[spec] ?? [:]
                if listOp == "delete" {
                    relationships[name, default: []].removeAll { paths.contains($0) }
                } else if listOp == "append" || listOp == "add" {
                    relationships[name, default: []] += paths
                } else if listOp == "prepend" {
                    relationships[name] = paths + (relationships[name] ?? [])
                } else {
                    relationships[name] = paths
                }
                table.relationships[spec] = relationships
            }
            if cursor.consume(40) { try cursor.skipBalanced(openedAlready: 40) }
            return
        }
        var typeName = word
        if cursor.consume(91) {
            try cursor.expect(93)
            typeName += "[]"
        }
        let fullName = try cursor.expectIdentifier()
        if fullName.hasSuffix(".timeSamples") {
            let name = String(fullName.dropLast(".timeSamples".count))
            try cursor.expect(61)
            let sample = try firstTimeSample(ofType: typeName)
            let existing = table.attributeValue(spec, name)
            if existing == nil || existing == USDValue.none, let sample {
                table.setAttribute(spec, name, sample)
            }
            return
        }
        if fullName.hasSuffix(".connect") {
            try cursor.expect(61)
            _ = try targets()
            return
        }
        if fullName.hasSuffix(".spline") {
            layer.noteUnsupported("spline values")
            try cursor.expect(61)
            try cursor.skipBalanced()
            return
        }
        if cursor.consume(61) {
            let value = try value(ofType: typeName)
            table.setAttribute(spec, fullName, value)
        } else if table.attributeValue(spec, fullName) == nil {
            table.setAttribute(spec, fullName, USDValue.none)
        }
        if cursor.consume(40) { try cursor.skipBalanced(openedAlready: 40) }
    }

    /// `{ time: value, … }` keeping the sample with the lowest time.
    private mutating func firstTimeSample(ofType typeName: String) throws -> USDValue? {
        try cursor.expect(123)
        var best: (time: Double, value: USDValue)?
        while !cursor.consume(125) {
            if cursor.atEnd { throw cursor.error("unterminated timeSamples") }
            let time = try cursor.number()
            try cursor.expect(58)
            let value = try value(ofType: typeName)
            if best == nil || time < best!.time { best = (time, value) }
            _ = cursor.consume(44)
        }
        return best?.value
    }
}

extension USDACursor {
    /// Skips the rest of a bracketed block whose opening byte was already consumed.
    mutating func skipBalanced(openedAlready open: UInt8) throws {
        advance(-1)
        guard peek == open else { throw error("internal: expected an opened block") }
        try skipBalanced()
    }
}

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
        var parser = USDAParser(cursor: USDACursor(bytes, name: identifier), layer: LayerData(identifier: identifier),
                                source: USDATextSource(bytes: bytes, identifier: identifier))
        try parser.parseLayer()
        return parser.layer
    }

    private mutating func parseLayer() throws {
        cursor.skipSpace() // the header line reads as a comment
        if cursor.consume(40) { try layerMetadata() }
        while true {
            cursor.skipSpace()
            if cursor.atEnd { return }
            try primStatement(parent: layer.root, depth: 0)
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

    private mutating func primStatement(parent: PrimSpec, depth: Int) throws {
        guard depth < USDAParser.maxPrimDepth else { throw cursor.error("prims nested too deeply") }
        let word = try cursor.expectIdentifier()
        guard let specifier = Specifier(rawValue: word) else {
            throw cursor.error("expected def, over or class, found '\(word)'")
        }
        var typeName = ""
        if cursor.peek != 34, cursor.peek != 39, let type = cursor.identifier() { typeName = type }
        guard let name = try cursor.string() else { throw cursor.error("expected a prim name") }
        let spec = parent.addChild(name, specifier: specifier)
        spec.specifier = specifier
        if !typeName.isEmpty { spec.typeName = typeName }
        if cursor.consume(40) { try primMetadata(spec) }
        try cursor.expect(123)
        try primBody(spec, depth: depth)
    }

    private mutating func primMetadata(_ spec: PrimSpec) throws {
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
                var list = key == "references" ? spec.references : spec.payloads
                switch op {
                case "prepend": list.prepended = items
                case "append": list.appended = items
                case "add": list.added = items
                case "delete": list.deleted = items
                case "reorder": break
                default: list.explicit = items
                }
                if key == "references" { spec.references = list } else { spec.payloads = list }
            case "kind":
                spec.kind = try cursor.string() ?? cursor.identifier()
            case "active":
                spec.active = try cursor.number() != 0
            case "customData":
                spec.customData = try dictionary(depth: 0)
            case "inherits", "specializes", "variantSets", "variants", "relocates":
                layer.noteUnsupported("prim metadata '\(key)'")
                try cursor.skipBalanced()
            default:
                try cursor.skipBalanced()
            }
        }
    }

    private mutating func primBody(_ spec: PrimSpec, depth: Int) throws {
        while true {
            cursor.skipSpace()
            if cursor.consume(125) { return }
            if cursor.atEnd { throw cursor.error("unterminated prim '\(spec.name)'") }
            if cursor.consume(59) { continue }
            guard let word = cursor.peekIdentifier() else {
                throw cursor.error("unexpected \(cursor.describeNext()) in prim '\(spec.name)'")
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

    private mutating func property(_ spec: PrimSpec) throws {
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
                if listOp == "delete" {
                    spec.relationships[name, default: []].removeAll { paths.contains($0) }
                } else if listOp == "append" || listOp == "add" {
                    spec.relationships[name, default: []] += paths
                } else if listOp == "prepend" {
                    spec.relationships[name] = paths + (spec.relationships[name] ?? [])
                } else {
                    spec.relationships[name] = paths
                }
            }
            if cursor.consume(40) { try cursor.skipBalanced(openedAlready: 40) }
            return
        }
        var typeName = word
        if cursor.consume(91) {
            try cursor.expect(93)
            typeName += "[]"
        }
        let fullName = intern(try cursor.expectIdentifier())
        if fullName.hasSuffix(".timeSamples") {
            let name = String(fullName.dropLast(".timeSamples".count))
            try cursor.expect(61)
            let sample = try firstTimeSample(ofType: typeName)
            if spec.attributes[name] == nil || spec.attributes[name] == USDValue.none, let sample {
                spec.attributes[name] = sample
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
            spec.attributes[fullName] = value
        } else if spec.attributes[fullName] == nil {
            spec.attributes[fullName] = USDValue.none
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

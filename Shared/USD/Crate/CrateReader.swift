/// Reads a `.usdc` crate layer into prim specs.
enum CrateReader {
    private static let attributeSpec: UInt32 = 1
    private static let primSpec: UInt32 = 6
    private static let pseudoRootSpec: UInt32 = 7
    private static let relationshipSpec: UInt32 = 8
    /// Deepest prim nesting accepted (the text parser has the same limit).
    static let maxDepth = 256

    static func read(_ bytes: [UInt8], range: Range<Int>, identifier: String) throws -> LayerData {
        let file = try CrateFile(bytes: bytes, range: range, identifier: identifier)
        let values = CrateValueReader(file: file)
        let layer = LayerData(identifier: identifier)
        // primChildren reps, checked when read and decoded again when ordering (a name
        // array per prim would stay alive through the whole read).
        var childOrder: [ObjectIdentifier: UInt64] = [:]
        var primsByIndex = [PrimSpec?](repeating: nil, count: file.paths.count)
        func prim(_ index: Int, budget: Int = maxDepth + 8) throws -> PrimSpec {
            if let found = primsByIndex[index] { return found }
            guard budget > 0 else { throw USDError(.corruptCrate, "path \(index) loops", context: identifier) }
            let node = file.paths[index]
            let created: PrimSpec
            if node.parent < 0 {
                created = layer.root
            } else if !node.isProperty, !file.paths[Int(node.parent)].isProperty {
                created = try prim(Int(node.parent), budget: budget - 1)
                    .addChild(try values.token(Int(node.element)), specifier: .over)
            } else {
                created = primSpec(at: try file.path(index), in: layer)
            }
            primsByIndex[index] = created
            return created
        }
        for spec in file.specs {
            guard spec.pathIndex < file.paths.count else {
                throw USDError(.corruptCrate, "spec path index \(spec.pathIndex) out of range", context: identifier)
            }
            let node = file.paths[spec.pathIndex]
            if max(1, Int(node.depth)) > maxDepth {
                throw USDError(.limitExceeded, "path deeper than \(maxDepth) prims", context: identifier)
            }
            if node.variant {
                layer.noteUnsupported("variant specs")
                continue
            }
            let fields = try file.fields(of: spec)
            switch spec.type {
            case pseudoRootSpec:
                for field in fields {
                    switch field.name {
                    case "defaultPrim": layer.defaultPrim = try values.value(field.rep).asString
                    case "upAxis": layer.upAxis = try values.value(field.rep).asString
                    case "metersPerUnit": layer.metersPerUnit = try values.value(field.rep).asNumbers?.first
                    case "primChildren":
                        childOrder[ObjectIdentifier(layer.root)] = try values.value(field.rep).asStrings == nil ? nil : field.rep
                    case "subLayers": layer.noteUnsupported("subLayers")
                    default: break
                    }
                }
            case primSpec:
                let prim = try prim(spec.pathIndex)
                for field in fields {
                    switch field.name {
                    case "specifier":
                        let raw = Int(try values.value(field.rep).asNumbers?.first ?? 1)
                        prim.specifier = raw == 0 ? .def : raw == 2 ? .class : .over
                    case "typeName": prim.typeName = try values.value(field.rep).asString ?? ""
                    case "kind": prim.kind = try values.value(field.rep).asString
                    case "active": prim.active = (try values.value(field.rep).asNumbers?.first ?? 1) != 0
                    case "customData":
                        if case .dictionary(let dictionary) = try values.value(field.rep) { prim.customData = dictionary }
                    case "references": prim.references = try values.arcs(field.rep)
                    case "payload": prim.payloads = try values.arcs(field.rep)
                    case "primChildren":
                        childOrder[ObjectIdentifier(prim)] = try values.value(field.rep).asStrings == nil ? nil : field.rep
                    case "inherits", "specializes", "variantSelection", "variantSetNames":
                        layer.noteUnsupported("prim field '\(field.name)'")
                    default: break
                    }
                }
            case attributeSpec, relationshipSpec:
                guard node.isProperty, node.parent >= 0 else { continue }
                let prim = try prim(Int(node.parent))
                let name = try values.token(Int(node.element.magnitude))
                var value: USDValue?
                var sample: USDValue?
                for field in fields {
                    switch field.name {
                    case "default": value = try values.value(field.rep)
                    case "timeSamples": sample = try values.value(field.rep)
                    case "targetPaths": prim.relationships[name] = try values.value(field.rep).asStrings ?? []
                    case "spline": layer.noteUnsupported("spline values")
                    default: break
                    }
                }
                if spec.type == attributeSpec {
                    if let value, value != .none { prim.attributes[name] = value }
                    else if let sample { prim.attributes[name] = sample }
                    else if prim.attributes[name] == nil { prim.attributes[name] = USDValue.none }
                }
            default:
                layer.noteUnsupported("spec type \(spec.type)")
            }
        }
        primsByIndex = []
        try order(layer.root, childOrder, values)
        return layer
    }

    /// The spec at a prim path, creating `over`s for missing ancestors.
    private static func primSpec(at path: String, in layer: LayerData) -> PrimSpec {
        var spec = layer.root
        for part in path.split(separator: "/") {
            spec = spec.addChild(String(part), specifier: .over)
        }
        return spec
    }

    /// Applies `primChildren` ordering, iteratively.
    private static func order(_ root: PrimSpec, _ orders: [ObjectIdentifier: UInt64], _ values: CrateValueReader) throws {
        var stack = [root]
        while let spec = stack.popLast() {
            if let rep = orders[ObjectIdentifier(spec)], let names = try values.value(rep).asStrings {
                let rank = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
                spec.reorderChildren { (rank[$0.name] ?? Int.max, 0) < (rank[$1.name] ?? Int.max, 0) }
            }
            stack.append(contentsOf: spec.children)
        }
    }
}

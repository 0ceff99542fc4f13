/// Reads a `.usdc` crate layer into prim specs.
enum CrateReader {
    private static let attributeSpec: UInt32 = 1
    private static let primSpec: UInt32 = 6
    private static let pseudoRootSpec: UInt32 = 7
    private static let relationshipSpec: UInt32 = 8
    /// Deepest prim nesting accepted (the text parser has the same limit).
    static let maxDepth = 256

    static func read(_ bytes: [UInt8], range: Range<Int>, identifier: String) throws -> LayerData {
        let layer = try read(bytes, range: range, identifier: identifier, mergingSameNames: false)
        // A well-formed crate names each path once; a corrupt one can name two prims alike
        // under one parent: they are one spec, so read again looking each name up.
        guard layer.table.hasSiblingsWithSameName() else { return layer }
        return try read(bytes, range: range, identifier: identifier, mergingSameNames: true)
    }

    private static func read(_ bytes: [UInt8], range: Range<Int>, identifier: String, mergingSameNames: Bool) throws -> LayerData {
        let file = try CrateFile(bytes: bytes, range: range, identifier: identifier)
        let values = CrateValueReader(file: file)
        // Values are decoded again when read, by a reader that keeps only the tokens and
        // strings: the path, spec and field tables are released with `file`.
        let store = ValueStore(crate: CrateValueReader(file: file.valueTablesOnly()))
        var primCount = 0
        var attributeCount = 0
        for spec in file.specs {
            if spec.type == primSpec { primCount += 1 } else if spec.type == attributeSpec { attributeCount += 1 }
        }
        let table = PrimTable(store: store, strings: file.tokens, expectedRows: primCount, expectedAttributes: attributeCount)
        let layer = LayerData(identifier: identifier, table: table)
        // primChildren reps, checked when read and decoded again when ordering (a name
        // array per prim would stay alive through the whole read).
        var childOrder: [Int32: UInt64] = [:]
        var rowsByPath = [Int32](repeating: PrimTable.noRow, count: file.paths.count)
        func prim(_ index: Int, budget: Int = maxDepth + 8) throws -> Int32 {
            if rowsByPath[index] != PrimTable.noRow { return rowsByPath[index] }
            guard budget > 0 else { throw USDError(.corruptCrate, "path \(index) loops", context: identifier) }
            let node = file.paths[index]
            let created: Int32
            if node.parent < 0 {
                created = 0
            } else if !node.isProperty, !file.paths[Int(node.parent)].isProperty {
                // A prim under a prim: its name is the element token (checked when read).
                let parent = try prim(Int(node.parent), budget: budget - 1)
                created = mergingSameNames ? table.addChild(nameID: UInt32(node.element), to: parent, specifier: .over)
                    : table.appendRow(nameID: UInt32(node.element), parent: parent, specifier: .over)
            } else {
                created = primRow(at: try file.path(index), in: table)
            }
            rowsByPath[index] = created
            return created
        }
        /// The string id of a token or string value (a token's id is its index).
        func stringID(_ rep: UInt64) throws -> UInt32? {
            if (rep >> 48) & 0xFF == 11, rep & (1 << 63) == 0 {
                let index = UInt32(truncatingIfNeeded: rep)
                _ = try values.token(Int(index))
                return index
            }
            return try values.value(rep).asString.map(table.intern)
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
                        childOrder[0] = try values.value(field.rep).asStrings == nil ? nil : field.rep
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
                        table.setSpecifier(prim, raw == 0 ? .def : raw == 2 ? .class : .over)
                    case "typeName": table.setTypeName(prim, try stringID(field.rep) ?? table.emptyID)
                    case "kind": table.setKind(prim, try values.value(field.rep).asString)
                    case "active": table.setActive(prim, (try values.value(field.rep).asNumbers?.first ?? 1) != 0)
                    case "customData":
                        if case .dictionary(let dictionary) = try values.value(field.rep) { table.customData[prim] = dictionary }
                    case "references": table.setReferences(prim, try values.arcs(field.rep))
                    case "payload": table.setPayloads(prim, try values.arcs(field.rep))
                    case "primChildren":
                        childOrder[prim] = try values.value(field.rep).asStrings == nil ? nil : field.rep
                    case "inherits", "specializes", "variantSelection", "variantSetNames":
                        layer.noteUnsupported("prim field '\(field.name)'")
                    default: break
                    }
                }
            case attributeSpec, relationshipSpec:
                guard node.isProperty, node.parent >= 0 else { continue }
                let prim = try prim(Int(node.parent))
                let nameID = UInt32(node.element.magnitude)
                var value: USDValue?
                var valueRep: UInt64 = 0
                var sample: USDValue?
                for field in fields {
                    switch field.name {
                    case "default":
                        value = try values.value(field.rep)
                        valueRep = field.rep
                    case "timeSamples": sample = try values.value(field.rep)
                    case "targetPaths":
                        table.relationships[prim, default: [:]][try values.token(Int(nameID))] = try values.value(field.rep).asStrings ?? []
                    case "spline": layer.noteUnsupported("spline values")
                    default: break
                    }
                }
                if spec.type == attributeSpec {
                    if let value, value != .none {
                        table.setAttribute(prim, nameID: nameID, slot: CrateValueReader.decodesWithoutPaths(valueRep) ? valueRep : store.add(value))
                    } else if let sample {
                        table.setAttribute(prim, nameID: nameID, slot: store.add(sample))
                    } else if table.attributeValue(prim, try values.token(Int(nameID))) == nil {
                        table.setAttribute(prim, nameID: nameID, slot: ValueStore.noneSlot)
                    }
                }
            default:
                layer.noteUnsupported("spec type \(spec.type)")
            }
        }
        rowsByPath = []
        try order(table, childOrder, values)
        table.finishBuilding()
        return layer
    }

    /// The row at a prim path, creating `over`s for missing ancestors.
    private static func primRow(at path: String, in table: PrimTable) -> Int32 {
        var row: Int32 = 0
        for part in path.split(separator: "/") {
            row = table.addChild(String(part), to: row, specifier: .over)
        }
        return row
    }

    /// Applies `primChildren` ordering, iteratively.
    private static func order(_ table: PrimTable, _ orders: [Int32: UInt64], _ values: CrateValueReader) throws {
        var stack: [Int32] = [0]
        while let row = stack.popLast() {
            if let rep = orders[row], let names = try values.value(rep).asStrings {
                let rank = Dictionary(names.enumerated().map { ($1, $0) }, uniquingKeysWith: { a, _ in a })
                table.reorderChildren(of: row) { (rank[table.name($0)] ?? Int.max, 0) < (rank[table.name($1)] ?? Int.max, 0) }
            }
            stack.append(contentsOf: table.children(row))
        }
    }
}

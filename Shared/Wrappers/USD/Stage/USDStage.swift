/// A composed stage: the root layer of a package with references and payloads resolved
/// inside the package. Findings from the package and from composition are kept together.
/// The composed prims are rows of a `PrimTable`; a root layer without references or payloads
/// is its own composition (its table is used in place, no second tree is built).
public final class USDStage {
    let table: PrimTable
    public let upAxis: String
    public let metersPerUnit: Double
    public let defaultPrim: String?
    public private(set) var findings: [ValidationFinding]
    public let package: USDZPackage

    /// Limits that keep hostile reference graphs bounded.
    static let maxArcDepth = 32
    static let maxComposedPrims = 2_000_000
    static let maxPrimDepth = 512

    /// Opens and composes a package file.
    public convenience init(contentsOf path: String) throws {
        try self.init(package: USDZPackage(contentsOf: path))
    }

    public init(package: USDZPackage) throws {
        let loader = LayerLoader(package: package)
        let root = try loader.rootLayer()
        upAxis = root.upAxis ?? "Y"
        metersPerUnit = root.metersPerUnit ?? 0.01
        defaultPrim = root.defaultPrim
        var composer = Composer(loader: loader)
        table = composer.compose(root)
        self.package = loader.package
        findings = loader.package.findings
    }

    /// The pseudo-root (`/`).
    public var pseudoRoot: USDPrim { USDPrim(table: table, row: 0) }

    /// Prims in depth-first order that are active, defined and not abstract (like
    /// `Usd.Stage.Traverse()`): a failing prim prunes its subtree.
    public func traverse() -> [USDPrim] {
        var result: [USDPrim] = []
        var stack = Array(table.children(0)).reversed() as [Int32]
        while let row = stack.popLast() {
            let prim = USDPrim(table: table, row: row)
            guard prim.active, prim.isDefined else { continue }
            result.append(prim)
            let start = stack.count
            stack.append(contentsOf: table.children(row))
            stack[start...].reverse()
        }
        return result
    }

    /// The prim at an absolute path.
    public func prim(at path: String) -> USDPrim? {
        var row: Int32 = 0
        for part in path.split(separator: "/") {
            guard let child = table.children(row).first(where: { table.name($0) == part }) else { return nil }
            row = child
        }
        return USDPrim(table: table, row: row)
    }
}

/// Builds composed prims from layer specs (local opinions first, then each reference's).
struct Composer {
    /// A spec contributing to a prim, with the namespace mapping of the arc that brought it
    /// (paths under `mapFrom` in its layer appear under `mapTo` on the stage).
    struct Source {
        let layer: LayerData
        let spec: Int32
        var mapFrom = "/"
        var mapTo = "/"

        func map(_ path: String) -> String {
            if mapFrom == mapTo { return path }
            if path == mapFrom { return mapTo }
            if path.hasPrefix(mapFrom + "/") || path.hasPrefix(mapFrom + ".") { return mapTo + path.dropFirst(mapFrom.count) }
            return path
        }
    }

    let loader: LayerLoader
    private var composed = PrimTable(store: ValueStore())
    private var composedCount = 0
    private var limitReported = false

    init(loader: LayerLoader) {
        self.loader = loader
    }

    /// The composed prims of a root layer.
    mutating func compose(_ layer: LayerData) -> PrimTable {
        if !layer.hasArcs(), layer.table.count - 1 <= Stage.maxComposedPrims {
            composeInPlace(layer)
            return layer.table
        }
        composeChildren(of: 0, path: "/", sources: [Source(layer: layer, spec: 0)], abstract: false, depth: 0)
        composed.finishBuilding()
        return composed
    }

    /// A layer without arcs composes to itself: only class subtrees become abstract and asset
    /// paths are resolved (what `merge` does for a prim with one spec), in the same order.
    private func composeInPlace(_ layer: LayerData) {
        let table = layer.table
        var stack: [(row: Int32, abstract: Bool)] = Array(table.children(0)).reversed().map { (row: $0, abstract: false) }
        while let (row, inherited) = stack.popLast() {
            let abstract = inherited || table.specifier(row) == .class
            if abstract { table.setSpecifier(row, .class) }
            for attribute in table.attributes(row) where table.isAsset(attribute) {
                table.replaceValue(of: attribute, with: resolvedAssets(table.value(of: attribute), layer: layer))
            }
            let start = stack.count
            stack.append(contentsOf: table.children(row).map { (row: $0, abstract: abstract) })
            stack[start...].reverse()
        }
    }

    private mutating func composeChildren(of prim: Int32, path primPath: String, sources: [Source], abstract: Bool, depth: Int) {
        guard depth < Stage.maxPrimDepth else {
            loader.report(ValidationFinding(.compositionLimit, .error, "prims nested deeper than \(Stage.maxPrimDepth) under \(primPath); dropped"))
            return
        }
        var names: [String] = []
        var seen = Set<String>()
        for source in sources {
            let table = source.layer.table
            for child in table.children(source.spec) where seen.insert(table.name(child)).inserted { names.append(table.name(child)) }
        }
        for name in names {
            guard composedCount < Stage.maxComposedPrims else {
                if !limitReported {
                    limitReported = true
                    loader.report(ValidationFinding(.compositionLimit, .error, "more than \(Stage.maxComposedPrims) composed prims; the rest are dropped"))
                }
                return
            }
            composedCount += 1
            let path = primPath == "/" ? "/" + name : primPath + "/" + name
            let local = sources.compactMap { source in
                source.layer.table.child(named: name, of: source.spec).map {
                    Source(layer: source.layer, spec: $0, mapFrom: source.mapFrom, mapTo: source.mapTo)
                }
            }
            let expanded = expand(local, path: path, depth: 0)
            let child = composed.appendRow(nameID: composed.intern(name), parent: prim, specifier: .over)
            merge(expanded, into: child, abstract: abstract)
            composeChildren(of: child, path: path, sources: expanded, abstract: abstract || composed.specifier(child) == .class,
                            depth: depth + 1)
        }
    }

    /// The sources followed by the targets of their references and payloads, recursively.
    private func expand(_ sources: [Source], path: String, depth: Int) -> [Source] {
        var result = sources
        for source in sources {
            let table = source.layer.table
            let arcs = table.references(source.spec).items + table.payloads(source.spec).items
            for arc in arcs {
                guard depth < Stage.maxArcDepth else {
                    loader.report(ValidationFinding(.compositionLimit, .error, "references nested deeper than \(Stage.maxArcDepth) at \(source.layer.identifier)"))
                    continue
                }
                guard let target = resolve(arc, from: source, composedPath: path) else { continue }
                if result.contains(where: { $0.layer === target.layer && $0.spec == target.spec }) { continue } // cycle
                result += expand([target], path: path, depth: depth + 1)
            }
        }
        return result
    }

    private func resolve(_ arc: CompositionArc, from source: Source, composedPath: String) -> Source? {
        var layer = source.layer
        if let asset = arc.assetPath, !asset.isEmpty {
            guard let entry = loader.package.resolve(assetPath: asset, from: source.layer.identifier) else {
                loader.report(ValidationFinding(.unresolvedAsset, .error, "\(source.layer.identifier): reference @\(asset)@ is not in the package"))
                return nil
            }
            guard let target = loader.layer(at: entry) else { return nil }
            layer = target
        }
        let primPath = arc.primPath ?? layer.defaultPrim.map { "/" + $0 }
        guard let primPath, let spec = layer.spec(at: primPath) else {
            loader.report(ValidationFinding(.unresolvedAsset, .warning, "\(source.layer.identifier): reference target \(arc.primPath ?? "(defaultPrim)") not found in \(layer.identifier)"))
            return nil
        }
        return Source(layer: layer, spec: spec, mapFrom: primPath, mapTo: composedPath)
    }

    /// Strongest opinion wins; attribute values stay in their layer's store (asset paths,
    /// once resolved, in the stage's own).
    private func merge(_ sources: [Source], into prim: Int32, abstract: Bool) {
        var specifier: Specifier = .over
        var activeSet = false
        var kindSet = false
        for source in sources {
            let table = source.layer.table
            let spec = source.spec
            if specifier == .over, table.specifier(spec) != .over { specifier = table.specifier(spec) }
            if composed.typeName(prim).isEmpty { composed.setTypeName(prim, composed.intern(table.typeName(spec))) }
            if !kindSet, let kind = table.kind(spec) {
                composed.setKind(prim, kind)
                kindSet = true
            }
            if !activeSet, let active = table.active(spec) {
                composed.setActive(prim, active)
                activeSet = true
            }
            if let customData = table.customData[spec] {
                var merged = composed.customData[prim] ?? [:]
                for (key, value) in customData where merged[key] == nil { merged[key] = value }
                composed.customData[prim] = merged
            }
            for attribute in table.attributes(spec) {
                let name = table.attributeName(attribute)
                if let existing = composed.attributeValue(prim, name), existing != .none { continue }
                let (store, slot) = table.slot(of: attribute)
                if table.isAsset(attribute) {
                    composed.setAttribute(prim, name, resolvedAssets(table.value(of: attribute), layer: source.layer))
                } else if let adopted = composed.adoptStore(table.stores[store]) {
                    composed.setAttribute(prim, nameID: composed.intern(name), store: adopted, slot: slot)
                } else {
                    composed.setAttribute(prim, name, table.value(of: attribute))
                }
            }
            if let relationships = table.relationships[spec] {
                var merged = composed.relationships[prim] ?? [:]
                for (name, targets) in relationships where merged[name] == nil { merged[name] = targets.map(source.map) }
                composed.relationships[prim] = merged
            }
        }
        composed.setSpecifier(prim, abstract ? .class : specifier)
    }

    private func resolvedAssets(_ value: USDValue, layer: LayerData) -> USDValue {
        switch value {
        case .asset(let raw):
            return .asset(resolveAsset(raw, layer: layer))
        case .assets(let raws):
            return .assets(raws.map { resolveAsset($0, layer: layer) })
        default:
            return value
        }
    }

    private func resolveAsset(_ raw: String, layer: LayerData) -> String {
        if raw.isEmpty { return raw }
        if let entry = loader.package.resolve(assetPath: raw, from: layer.identifier) { return entry }
        loader.report(ValidationFinding(.unresolvedAsset, .warning, "\(layer.identifier): asset @\(raw)@ is not in the package"))
        return raw
    }
}

private typealias Stage = USDStage

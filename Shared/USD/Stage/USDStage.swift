/// A composed stage: the root layer of a package with references and payloads resolved
/// inside the package. Findings from the package and from composition are kept together.
public final class USDStage {
    public let pseudoRoot: USDPrim
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
        pseudoRoot = composer.composeRoot(root)
        self.package = loader.package
        findings = loader.package.findings
    }

    /// Prims in depth-first order that are active, defined and not abstract (like
    /// `Usd.Stage.Traverse()`): a failing prim prunes its subtree.
    public func traverse() -> [USDPrim] {
        var result: [USDPrim] = []
        var stack = Array(pseudoRoot.children.reversed())
        while let prim = stack.popLast() {
            guard prim.active, prim.isDefined else { continue }
            result.append(prim)
            stack.append(contentsOf: prim.children.reversed())
        }
        return result
    }

    /// The prim at an absolute path.
    public func prim(at path: String) -> USDPrim? {
        var prim = pseudoRoot
        for part in path.split(separator: "/") {
            guard let child = prim.children.first(where: { $0.name == part }) else { return nil }
            prim = child
        }
        return prim
    }
}

/// Builds composed prims from layer specs (local opinions first, then each reference's).
struct Composer {
    /// A spec contributing to a prim, with the namespace mapping of the arc that brought it
    /// (paths under `mapFrom` in its layer appear under `mapTo` on the stage).
    struct Source {
        let layer: LayerData
        let spec: PrimSpec
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
    /// Set when the root layer has no arcs: then no spec is read twice, and each spec's
    /// children are released once composed, so specs and prims are not all alive at once.
    private var releaseSpecs = false
    private var composedCount = 0
    private var limitReported = false

    init(loader: LayerLoader) {
        self.loader = loader
    }

    mutating func composeRoot(_ layer: LayerData) -> USDPrim {
        let root = USDPrim(path: "/", name: "", parent: nil)
        root.specifier = .def
        releaseSpecs = !layer.hasArcs()
        composeChildren(of: root, sources: [Source(layer: layer, spec: layer.root)], abstract: false, depth: 0)
        return root
    }

    private mutating func composeChildren(of prim: USDPrim, sources: [Source], abstract: Bool, depth: Int) {
        guard depth < Stage.maxPrimDepth else {
            loader.report(ValidationFinding(.compositionLimit, .error, "prims nested deeper than \(Stage.maxPrimDepth) under \(prim.path); dropped"))
            return
        }
        var names: [String] = []
        var seen = Set<String>()
        for source in sources {
            for child in source.spec.children where seen.insert(child.name).inserted { names.append(child.name) }
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
            let path = prim.path == "/" ? "/" + name : prim.path + "/" + name
            let local = sources.compactMap { source in
                source.spec.child(named: name).map { Source(layer: source.layer, spec: $0, mapFrom: source.mapFrom, mapTo: source.mapTo) }
            }
            let expanded = expand(local, path: path, depth: 0)
            let child = USDPrim(path: path, name: name, parent: prim)
            merge(expanded, into: child, abstract: abstract)
            prim.children.append(child)
            composeChildren(of: child, sources: expanded, abstract: abstract || child.specifier == .class, depth: depth + 1)
        }
        if releaseSpecs {
            for source in sources { source.spec.releaseChildren() }
        }
    }

    /// The sources followed by the targets of their references and payloads, recursively.
    private func expand(_ sources: [Source], path: String, depth: Int) -> [Source] {
        var result = sources
        for source in sources {
            let arcs = source.spec.references.items + source.spec.payloads.items
            for arc in arcs {
                guard depth < Stage.maxArcDepth else {
                    loader.report(ValidationFinding(.compositionLimit, .error, "references nested deeper than \(Stage.maxArcDepth) at \(source.layer.identifier)"))
                    continue
                }
                guard let target = resolve(arc, from: source, composedPath: path) else { continue }
                if result.contains(where: { $0.spec === target.spec }) { continue } // cycle
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

    private func merge(_ sources: [Source], into prim: USDPrim, abstract: Bool) {
        if sources.count == 1, let only = sources.first, only.mapFrom == only.mapTo,
           !only.spec.attributes.values.contains(where: { if case .asset = $0 { true } else if case .assets = $0 { true } else { false } }) {
            // One spec and nothing to rewrite: share its storage instead of copying it.
            let spec = only.spec
            prim.typeName = spec.typeName
            prim.kind = spec.kind
            prim.active = spec.active ?? true
            prim.customData = spec.customData
            prim.attributes = spec.attributes
            prim.relationships = spec.relationships
            prim.specifier = abstract ? .class : spec.specifier
            return
        }
        var specifier: Specifier = .over
        var activeSet = false
        for source in sources {
            let spec = source.spec
            if specifier == .over, spec.specifier != .over { specifier = spec.specifier }
            if prim.typeName.isEmpty { prim.typeName = spec.typeName }
            if prim.kind == nil { prim.kind = spec.kind }
            if !activeSet, let active = spec.active { prim.active = active; activeSet = true }
            for (key, value) in spec.customData where prim.customData[key] == nil { prim.customData[key] = value }
            for (name, value) in spec.attributes {
                if let existing = prim.attributes[name], existing != .none { continue }
                prim.attributes[name] = resolvedAssets(value, layer: source.layer)
            }
            for (name, targets) in spec.relationships where prim.relationships[name] == nil {
                prim.relationships[name] = targets.map(source.map)
            }
        }
        prim.specifier = abstract ? .class : specifier
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

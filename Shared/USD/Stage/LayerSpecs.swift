/// How a prim spec is introduced.
public enum Specifier: String, Sendable {
    case def, over, `class`
}

/// A reference or payload arc: an asset (nil = this layer) and an optional prim path.
struct CompositionArc: Sendable, Equatable {
    var assetPath: String?
    var primPath: String?
}

/// A list-op as authored: explicit items replace, the rest edit weaker opinions.
struct ListOp<Item: Sendable & Equatable>: Sendable {
    var explicit: [Item]?
    var prepended: [Item] = []
    var appended: [Item] = []
    var added: [Item] = []
    var deleted: [Item] = []

    /// The items this op yields on its own (no weaker opinions to edit).
    var items: [Item] {
        var result = prepended + (explicit ?? []) + added + appended
        result.removeAll { deleted.contains($0) }
        return result
    }
}

/// One prim as authored in one layer.
final class PrimSpec {
    let name: String
    var specifier: Specifier
    var typeName: String = ""
    var children: [PrimSpec] = []
    /// Child positions by name, kept only once there are many children (few are searched).
    private var childIndex: [String: Int] = [:]
    private static let indexedChildren = 8
    var attributes = AttributeTable()
    var relationships: [String: [String]] = [:]
    /// References and payloads, boxed: most specs have none, so they cost a pointer.
    private final class Arcs {
        var references = ListOp<CompositionArc>()
        var payloads = ListOp<CompositionArc>()
    }
    private var arcs: Arcs?
    var references: ListOp<CompositionArc> {
        get { arcs?.references ?? ListOp() }
        set { (arcs ?? makeArcs()).references = newValue }
    }
    var payloads: ListOp<CompositionArc> {
        get { arcs?.payloads ?? ListOp() }
        set { (arcs ?? makeArcs()).payloads = newValue }
    }
    var kind: String?
    var customData: [String: USDValue] = [:]
    var active: Bool?

    init(name: String, specifier: Specifier) {
        self.name = name
        self.specifier = specifier
    }

    /// Whether references or payloads were authored (even empty ones).
    var hasArcs: Bool { arcs != nil }

    /// Drops the child specs (after composition, when nothing can reference them again).
    func releaseChildren() {
        children = []
        childIndex = [:]
    }

    private func makeArcs() -> Arcs {
        let made = Arcs()
        arcs = made
        return made
    }

    func child(named name: String) -> PrimSpec? {
        if children.count > PrimSpec.indexedChildren { return childIndex[name].map { children[$0] } }
        return children.first { $0.name == name }
    }

    /// Sorts children stably by `areInIncreasingOrder` and reindexes them.
    func reorderChildren(by areInIncreasingOrder: (PrimSpec, PrimSpec) -> Bool) {
        let indexed = children.enumerated().sorted { a, b in
            if areInIncreasingOrder(a.element, b.element) { return true }
            if areInIncreasingOrder(b.element, a.element) { return false }
            return a.offset < b.offset
        }
        children = indexed.map(\.element)
        if children.count > PrimSpec.indexedChildren {
            childIndex = Dictionary(uniqueKeysWithValues: children.enumerated().map { ($1.name, $0) })
        }
    }

    /// Adds a child or returns the existing one of that name.
    @discardableResult
    func addChild(_ name: String, specifier: Specifier) -> PrimSpec {
        if let existing = child(named: name) { return existing }
        let spec = PrimSpec(name: name, specifier: specifier)
        children.append(spec)
        if children.count == PrimSpec.indexedChildren + 1 {
            childIndex = Dictionary(uniqueKeysWithValues: children.enumerated().map { ($1.name, $0) })
        } else if children.count > PrimSpec.indexedChildren + 1 {
            childIndex[name] = children.count - 1
        }
        return spec
    }
}

/// A parsed layer: its metadata and prim specs under the pseudo-root.
final class LayerData {
    /// Path of the layer inside the package.
    let identifier: String
    let root = PrimSpec(name: "", specifier: .def)
    var defaultPrim: String?
    var upAxis: String?
    var metersPerUnit: Double?
    /// Constructs read but not understood, reported as findings.
    var unsupported: [String] = []

    init(identifier: String) {
        self.identifier = identifier
    }

    /// The spec at an absolute prim path (`/A/B`), if authored.
    func spec(at path: String) -> PrimSpec? {
        var spec = root
        for part in path.split(separator: "/") {
            guard let child = spec.child(named: String(part)) else { return nil }
            spec = child
        }
        return spec
    }

    /// Whether any spec of the layer has references or payloads.
    func hasArcs() -> Bool {
        var stack = [root]
        while let spec = stack.popLast() {
            if spec.hasArcs { return true }
            stack.append(contentsOf: spec.children)
        }
        return false
    }

    func noteUnsupported(_ what: String) {
        if unsupported.count < 50, !unsupported.contains(what) { unsupported.append(what) }
    }
}

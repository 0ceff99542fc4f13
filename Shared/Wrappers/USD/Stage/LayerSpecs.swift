/// How a prim spec is introduced.
public enum Specifier: String, Sendable {
    case def, over, `class`

    var code: UInt8 {
        switch self {
        case .def: 0
        case .over: 1
        case .class: 2
        }
    }

    init(code: UInt8) {
        self = code == 0 ? .def : code == 2 ? .class : .over
    }
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

/// Where attribute values live. A slot is either a crate value rep, decoded again each time
/// it is read (it was decoded once when the layer was read, so it cannot fail then), or,
/// with `ownedTag` set, an index into `values` (text layers, values the crate reader had to
/// decode while its path table was alive, values rewritten by composition).
final class ValueStore {
    /// Crate reps never set bits 56–60; one of them marks an owned value.
    static let ownedTag: UInt64 = 1 << 60
    /// The slot of `USDValue.none` in every store.
    static let noneSlot: UInt64 = ownedTag

    /// Decodes this layer's crate reps (tokens, strings and bytes only: no path table).
    let crate: CrateValueReader?
    private var values: [USDValue] = [.none]

    init(crate: CrateValueReader? = nil) {
        self.crate = crate
    }

    func add(_ value: USDValue) -> UInt64 {
        if value == .none { return ValueStore.noneSlot }
        values.append(value)
        return UInt64(values.count - 1) | ValueStore.ownedTag
    }

    func value(_ slot: UInt64) -> USDValue {
        if slot & ValueStore.ownedTag != 0 { return values[Int(slot & ~ValueStore.ownedTag)] }
        return (try? crate?.value(slot)) ?? .none
    }

    /// Whether the slot holds an asset path or asset path array (without decoding a crate rep).
    func isAsset(_ slot: UInt64) -> Bool {
        if slot & ValueStore.ownedTag != 0 {
            switch values[Int(slot & ~ValueStore.ownedTag)] {
            case .asset, .assets: return true
            default: return false
            }
        }
        return (slot >> 48) & 0xFF == 12
    }
}

/// Prims as rows of integer-indexed columns: the specs of one layer, or the composed prims
/// of a stage. Row 0 is the pseudo-root. Names, type names and kinds are indexes into
/// `strings`; children and attributes are singly linked lists in authoring order; attribute
/// values are slots of a `ValueStore`. Data few prims author (customData, relationships,
/// composition arcs) is kept in dictionaries by row. No object per prim.
final class PrimTable {
    static let noRow: Int32 = -1
    static let noKind = UInt32.max
    private static let activeAuthored: UInt8 = 4
    private static let activeValue: UInt8 = 8
    /// Children lists longer than this get a name index when searched.
    private static let indexedChildren = 8

    private(set) var strings: [String]
    /// The id of "".
    let emptyID: UInt32
    /// `strings` by value, built on the first `intern` and dropped by `finishBuilding`.
    private var stringIDs: [String: UInt32]?

    // Rows.
    private(set) var nameID: [UInt32] = []
    private(set) var typeID: [UInt32] = []
    private(set) var kindID: [UInt32] = []
    private(set) var parentRow: [Int32] = []
    private(set) var firstChild: [Int32] = []
    private(set) var nextSibling: [Int32] = []
    private(set) var firstAttribute: [Int32] = []
    /// Bits 0–1 specifier, bit 2 `active` authored, bit 3 its value.
    private var flags: [UInt8] = []
    /// List tails, only while rows are added.
    private var lastChild: [Int32] = []
    private var lastAttribute: [Int32] = []

    // Attributes.
    private(set) var attributeNameID: [UInt32] = []
    private(set) var nextAttribute: [Int32] = []
    private(set) var attributeSlot: [UInt64] = []
    /// Index into `stores` per attribute, once some value is in another store than
    /// `stores[0]` (`mixedStores`); empty until then.
    private var attributeStore: [UInt16] = []
    private var mixedStores = false

    /// The value stores attribute slots refer to; `stores[0]` is the table's own.
    private(set) var stores: [ValueStore]
    private var storeIndex: [ObjectIdentifier: Int] = [:]

    var customData: [Int32: [String: USDValue]] = [:]
    var relationships: [Int32: [String: [String]]] = [:]
    private struct Arcs {
        var references = ListOp<CompositionArc>()
        var payloads = ListOp<CompositionArc>()
    }
    private var arcs: [Int32: Arcs] = [:]
    /// Child rows by name, for parents with many children that were searched by name.
    private var childIndex: [Int32: [String: Int32]] = [:]

    /// A table with only the pseudo-root; `strings` seeds the string table (a crate's tokens).
    init(store: ValueStore, strings: [String] = [""], expectedRows: Int = 0, expectedAttributes: Int = 0) {
        self.strings = strings
        stores = [store]
        emptyID = UInt32(strings.firstIndex(of: "") ?? strings.count)
        if emptyID == strings.count { self.strings.append("") }
        let rows = expectedRows + 1
        nameID.reserveCapacity(rows)
        typeID.reserveCapacity(rows)
        kindID.reserveCapacity(rows)
        parentRow.reserveCapacity(rows)
        firstChild.reserveCapacity(rows)
        nextSibling.reserveCapacity(rows)
        firstAttribute.reserveCapacity(rows)
        lastChild.reserveCapacity(rows)
        lastAttribute.reserveCapacity(rows)
        flags.reserveCapacity(rows)
        attributeNameID.reserveCapacity(expectedAttributes)
        nextAttribute.reserveCapacity(expectedAttributes)
        attributeSlot.reserveCapacity(expectedAttributes)
        appendRow(nameID: emptyID, parent: PrimTable.noRow, specifier: .def)
    }

    var count: Int { nameID.count }

    /// Drops what only adding rows needs.
    func finishBuilding() {
        lastChild = []
        lastAttribute = []
        stringIDs = nil
    }

    // MARK: Strings

    func intern(_ text: String) -> UInt32 {
        if stringIDs == nil {
            var ids: [String: UInt32] = [:]
            for (index, string) in strings.enumerated() where ids[string] == nil { ids[string] = UInt32(index) }
            stringIDs = ids
        }
        if let id = stringIDs?[text] { return id }
        strings.append(text)
        stringIDs?[text] = UInt32(strings.count - 1)
        return UInt32(strings.count - 1)
    }

    // MARK: Rows

    func name(_ row: Int32) -> String { strings[Int(nameID[Int(row)])] }
    func typeName(_ row: Int32) -> String { strings[Int(typeID[Int(row)])] }
    func kind(_ row: Int32) -> String? {
        let id = kindID[Int(row)]
        return id == PrimTable.noKind ? nil : strings[Int(id)]
    }
    func parent(_ row: Int32) -> Int32 { parentRow[Int(row)] }
    func specifier(_ row: Int32) -> Specifier { Specifier(code: flags[Int(row)] & 3) }
    /// The authored `active` opinion, if any.
    func active(_ row: Int32) -> Bool? {
        let bits = flags[Int(row)]
        return bits & PrimTable.activeAuthored == 0 ? nil : bits & PrimTable.activeValue != 0
    }

    func setTypeName(_ row: Int32, _ id: UInt32) { typeID[Int(row)] = id }
    func setKind(_ row: Int32, _ kind: String?) { kindID[Int(row)] = kind.map(intern) ?? PrimTable.noKind }
    func setSpecifier(_ row: Int32, _ specifier: Specifier) {
        flags[Int(row)] = flags[Int(row)] & ~3 | specifier.code
    }
    func setActive(_ row: Int32, _ active: Bool?) {
        var bits = flags[Int(row)] & ~(PrimTable.activeAuthored | PrimTable.activeValue)
        if let active { bits |= PrimTable.activeAuthored | (active ? PrimTable.activeValue : 0) }
        flags[Int(row)] = bits
    }

    /// The children of a row, in order.
    func children(_ row: Int32) -> LinkedRows { LinkedRows(links: nextSibling, current: firstChild[Int(row)]) }


    /// Appends a row as the last child of `parent` (no check for an existing name).
    @discardableResult
    func appendRow(nameID: UInt32, parent: Int32, specifier: Specifier) -> Int32 {
        let row = Int32(self.nameID.count)
        self.nameID.append(nameID)
        typeID.append(emptyID)
        kindID.append(PrimTable.noKind)
        parentRow.append(parent)
        firstChild.append(PrimTable.noRow)
        nextSibling.append(PrimTable.noRow)
        firstAttribute.append(PrimTable.noRow)
        lastChild.append(PrimTable.noRow)
        lastAttribute.append(PrimTable.noRow)
        flags.append(specifier.code)
        if parent != PrimTable.noRow {
            let tail = lastChild[Int(parent)]
            if tail == PrimTable.noRow { firstChild[Int(parent)] = row } else { nextSibling[Int(tail)] = row }
            lastChild[Int(parent)] = row
            if childIndex[parent] != nil { childIndex[parent]?[strings[Int(nameID)]] = row }
        }
        return row
    }

    /// Adds a child or returns the existing one of that name.
    @discardableResult
    func addChild(_ name: String, to parent: Int32, specifier: Specifier) -> Int32 {
        if let existing = child(named: name, of: parent) { return existing }
        return appendRow(nameID: intern(name), parent: parent, specifier: specifier)
    }

    /// Adds a child named by a string id or returns the existing one of that name.
    func addChild(nameID: UInt32, to parent: Int32, specifier: Specifier) -> Int32 {
        if let existing = child(named: strings[Int(nameID)], of: parent) { return existing }
        return appendRow(nameID: nameID, parent: parent, specifier: specifier)
    }

    func child(named name: String, of parent: Int32) -> Int32? {
        if let index = childIndex[parent] { return index[name] }
        var found: Int32?
        var count = 0
        var row = firstChild[Int(parent)]
        while row != PrimTable.noRow {
            if found == nil, strings[Int(nameID[Int(row)])] == name { found = row }
            count += 1
            row = nextSibling[Int(row)]
        }
        if count > PrimTable.indexedChildren {
            var index: [String: Int32] = [:]
            for child in children(parent) where index[self.name(child)] == nil { index[self.name(child)] = child }
            childIndex[parent] = index
        }
        return found
    }

    /// Whether some row has two children of the same name.
    func hasSiblingsWithSameName() -> Bool {
        var names: [String] = []
        for row in 0..<Int32(count) where firstChild[Int(row)] != PrimTable.noRow {
            names.removeAll(keepingCapacity: true)
            for child in children(row) { names.append(name(child)) }
            guard names.count > 1 else { continue }
            names.sort()
            if zip(names, names.dropFirst()).contains(where: { $0 == $1 }) { return true }
        }
        return false
    }

    /// Sorts a row's children stably by `areInIncreasingOrder`.
    func reorderChildren(of row: Int32, by areInIncreasingOrder: (Int32, Int32) -> Bool) {
        let rows = Array(children(row))
        guard rows.count > 1 else { return }
        let sorted = rows.enumerated().sorted { a, b in
            if areInIncreasingOrder(a.element, b.element) { return true }
            if areInIncreasingOrder(b.element, a.element) { return false }
            return a.offset < b.offset
        }.map(\.element)
        firstChild[Int(row)] = sorted[0]
        for (index, child) in sorted.enumerated() {
            nextSibling[Int(child)] = index + 1 < sorted.count ? sorted[index + 1] : PrimTable.noRow
        }
        if !lastChild.isEmpty { lastChild[Int(row)] = sorted[sorted.count - 1] }
    }

    /// The row at an absolute prim path (`/A/B`).
    func row(at path: String) -> Int32? {
        var row: Int32 = 0
        for part in path.split(separator: "/") {
            guard let child = child(named: String(part), of: row) else { return nil }
            row = child
        }
        return row
    }

    /// The row's path (`/A/B`; `/` for the pseudo-root).
    func path(_ row: Int32) -> String {
        var names: [String] = []
        var current = row
        while current > 0 {
            names.append(name(current))
            current = parentRow[Int(current)]
        }
        return "/" + names.reversed().joined(separator: "/")
    }

    // MARK: Composition arcs

    var hasArcs: Bool { !arcs.isEmpty }
    func references(_ row: Int32) -> ListOp<CompositionArc> { arcs[row]?.references ?? ListOp() }
    func payloads(_ row: Int32) -> ListOp<CompositionArc> { arcs[row]?.payloads ?? ListOp() }
    func setReferences(_ row: Int32, _ op: ListOp<CompositionArc>) { arcs[row, default: Arcs()].references = op }
    func setPayloads(_ row: Int32, _ op: ListOp<CompositionArc>) { arcs[row, default: Arcs()].payloads = op }

    // MARK: Attributes

    /// The attribute indexes of a row, in authoring order.
    func attributes(_ row: Int32) -> LinkedRows { LinkedRows(links: nextAttribute, current: firstAttribute[Int(row)]) }

    /// The rows of a singly linked list (children or attributes).
    struct LinkedRows: Sequence, IteratorProtocol {
        let links: [Int32]
        var current: Int32

        mutating func next() -> Int32? {
            guard current != PrimTable.noRow else { return nil }
            defer { current = links[Int(current)] }
            return current
        }
    }

    func attributeName(_ attribute: Int32) -> String { strings[Int(attributeNameID[Int(attribute)])] }

    func store(of attribute: Int32) -> ValueStore {
        mixedStores ? stores[Int(attributeStore[Int(attribute)])] : stores[0]
    }

    func slot(of attribute: Int32) -> (store: Int, slot: UInt64) {
        (mixedStores ? Int(attributeStore[Int(attribute)]) : 0, attributeSlot[Int(attribute)])
    }

    func value(of attribute: Int32) -> USDValue { store(of: attribute).value(attributeSlot[Int(attribute)]) }
    func isAsset(_ attribute: Int32) -> Bool { store(of: attribute).isAsset(attributeSlot[Int(attribute)]) }

    /// The attribute of a row with that name.
    func attribute(named name: String, of row: Int32) -> Int32? {
        var attribute = firstAttribute[Int(row)]
        while attribute != PrimTable.noRow {
            if strings[Int(attributeNameID[Int(attribute)])] == name { return attribute }
            attribute = nextAttribute[Int(attribute)]
        }
        return nil
    }

    private func attribute(id: UInt32, of row: Int32) -> Int32? {
        var attribute = firstAttribute[Int(row)]
        while attribute != PrimTable.noRow {
            if attributeNameID[Int(attribute)] == id { return attribute }
            attribute = nextAttribute[Int(attribute)]
        }
        return nil
    }

    /// The index of another table's store in this one's list, added once (nil when the
    /// list is full: 65,536 stores).
    func adoptStore(_ store: ValueStore) -> Int? {
        if store === stores[0] { return 0 }
        if let index = storeIndex[ObjectIdentifier(store)] { return index }
        guard stores.count <= Int(UInt16.max) else { return nil }
        stores.append(store)
        storeIndex[ObjectIdentifier(store)] = stores.count - 1
        return stores.count - 1
    }

    /// Sets (or replaces) an attribute to a slot of `stores[store]`.
    func setAttribute(_ row: Int32, nameID: UInt32, store: Int = 0, slot: UInt64) {
        if store != 0, !mixedStores {
            attributeStore = [UInt16](repeating: 0, count: attributeSlot.count)
            mixedStores = true
        }
        if let existing = attribute(id: nameID, of: row) {
            attributeSlot[Int(existing)] = slot
            if mixedStores { attributeStore[Int(existing)] = UInt16(store) }
            return
        }
        let attribute = Int32(attributeSlot.count)
        attributeNameID.append(nameID)
        nextAttribute.append(PrimTable.noRow)
        attributeSlot.append(slot)
        if mixedStores { attributeStore.append(UInt16(store)) }
        let tail = lastAttribute[Int(row)]
        if tail == PrimTable.noRow { firstAttribute[Int(row)] = attribute } else { nextAttribute[Int(tail)] = attribute }
        lastAttribute[Int(row)] = attribute
    }

    /// Sets an attribute to a value kept in this table's own store.
    func setAttribute(_ row: Int32, _ name: String, _ value: USDValue) {
        setAttribute(row, nameID: intern(name), slot: stores[0].add(value))
    }

    /// Replaces an attribute's value with one kept in this table's own store.
    func replaceValue(of attribute: Int32, with value: USDValue) {
        attributeSlot[Int(attribute)] = stores[0].add(value)
        if mixedStores { attributeStore[Int(attribute)] = 0 }
    }

    /// The value of a row's attribute by name.
    func attributeValue(_ row: Int32, _ name: String) -> USDValue? {
        attribute(named: name, of: row).map(value(of:))
    }
}

/// A parsed layer: its metadata and prim specs (row 0 is the pseudo-root).
final class LayerData {
    /// Path of the layer inside the package.
    let identifier: String
    let table: PrimTable
    var defaultPrim: String?
    var upAxis: String?
    var metersPerUnit: Double?
    /// Constructs read but not understood, reported as findings.
    var unsupported: [String] = []

    init(identifier: String, table: PrimTable) {
        self.identifier = identifier
        self.table = table
    }

    /// The spec row at an absolute prim path (`/A/B`), if authored.
    func spec(at path: String) -> Int32? { table.row(at: path) }

    /// Whether any spec of the layer has references or payloads.
    func hasArcs() -> Bool { table.hasArcs }

    func noteUnsupported(_ what: String) {
        if unsupported.count < 50, !unsupported.contains(what) { unsupported.append(what) }
    }
}

/// A prim's attributes by name, in authoring order, decoded (what `USDPrim.attributes`
/// returns; the stage itself keeps attributes as rows of its `PrimTable`). A flat list of
/// entries: a prim carries a handful of attributes, so linear lookups are as fast as hashing.
public struct AttributeTable: Sendable, Sequence {
    public struct Entry: Sendable {
        public let key: String
        public var value: USDValue
    }

    private var entries: [Entry] = []

    public init() {}

    public var count: Int { entries.count }
    public var isEmpty: Bool { entries.isEmpty }
    /// The values in authoring order.
    public var values: LazyMapSequence<[Entry], USDValue> { entries.lazy.map(\.value) }

    /// The value of an attribute; setting nil removes it.
    public subscript(name: String) -> USDValue? {
        get {
            for entry in entries where entry.key == name { return entry.value }
            return nil
        }
        set {
            let index = entries.firstIndex { $0.key == name }
            switch (index, newValue) {
            case let (index?, value?): entries[index].value = value
            case let (index?, nil): entries.remove(at: index)
            case let (nil, value?): entries.append(Entry(key: name, value: value))
            case (nil, nil): break
            }
        }
    }

    public func makeIterator() -> some IteratorProtocol<(key: String, value: USDValue)> {
        entries.lazy.map { (key: $0.key, value: $0.value) }.makeIterator()
    }
}

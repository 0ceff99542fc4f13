/// A flattened numeric array left in its layer's bytes (crate or text) until it is read: the
/// report needs few of a mesh's arrays, and most only for their size. The array was checked
/// when the layer was read, so decoding it again cannot fail on the same bytes.
public struct LazyNumbers: Sendable, Equatable {
    private enum Source: Sendable {
        case crate(CrateArrayDecoder, rep: UInt64)
        case text(USDATextSource, offset: Int)
    }

    private let source: Source

    init(crate decoder: CrateArrayDecoder, rep: UInt64) {
        source = .crate(decoder, rep: rep)
    }

    init(text: USDATextSource, offset: Int) {
        source = .text(text, offset: offset)
    }

    /// The numbers, flattened like `USDValue.numbers`.
    public var numbers: [Double] {
        switch source {
        case .crate(let decoder, let rep):
            (try? decoder.numbers(rep)) ?? []
        case .text(let text, let offset):
            (try? USDACursor.numbers(in: text.bytes, name: text.identifier, at: offset)) ?? []
        }
    }

    public static func == (a: LazyNumbers, b: LazyNumbers) -> Bool {
        a.numbers == b.numbers
    }
}

/// The bytes of a text layer (shared with the package, not copied).
final class USDATextSource: Sendable {
    let bytes: ArraySlice<UInt8>
    let identifier: String

    init(bytes: ArraySlice<UInt8>, identifier: String) {
        self.bytes = bytes
        self.identifier = identifier
    }
}

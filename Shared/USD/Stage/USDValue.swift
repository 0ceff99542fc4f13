/// An attribute or metadata value, reduced to what the reader needs. Numeric scalars,
/// vectors, matrices and arrays of them are flattened into `numbers` (matrices row-major).
public enum USDValue: Sendable, Equatable {
    case bool(Bool)
    case number(Double)
    case numbers([Double])
    /// A numeric array still in a `.usdc` layer, decoded when asked (`asNumbers`); compares
    /// equal to another only by its numbers.
    case crateNumbers(CrateNumbers)
    case string(String)
    case strings([String])
    case asset(String)
    case assets([String])
    case path(String)
    case paths([String])
    case dictionary([String: USDValue])
    /// A value block (`None`) or a value type the reader does not decode.
    case none

    public var asNumbers: [Double]? {
        switch self {
        case .numbers(let values): values
        case .crateNumbers(let lazy): lazy.numbers
        case .number(let value): [value]
        case .bool(let value): [value ? 1 : 0]
        default: nil
        }
    }

    public var asString: String? {
        switch self {
        case .string(let value), .asset(let value), .path(let value): value
        default: nil
        }
    }

    public var asStrings: [String]? {
        switch self {
        case .strings(let values), .assets(let values), .paths(let values): values
        case .string(let value), .asset(let value), .path(let value): [value]
        default: nil
        }
    }

    /// A JSON-compatible rendering used for `customData` in reports.
    var jsonObject: JSONValue {
        switch self {
        case .bool(let value): .bool(value)
        case .number(let value): .number(value)
        case .numbers(let values): .array(values.map { .number($0) })
        case .crateNumbers(let lazy): .array(lazy.numbers.map { .number($0) })
        case .string(let value), .asset(let value), .path(let value): .string(value)
        case .strings(let values), .assets(let values), .paths(let values): .array(values.map { .string($0) })
        case .dictionary(let values): .object(values.sorted { $0.key < $1.key }.map { ($0.key, $0.value.jsonObject) })
        case .none: .null
        }
    }
}

/// A flattened numeric array left in the crate bytes until it is read (the report needs few
/// of a mesh's arrays, and most only for their size).
public struct CrateNumbers: Sendable, Equatable {
    let decoder: CrateArrayDecoder
    let rep: UInt64

    /// The numbers, flattened like `USDValue.numbers` (checked when the layer was read).
    public var numbers: [Double] { (try? decoder.numbers(rep)) ?? [] }

    public static func == (a: CrateNumbers, b: CrateNumbers) -> Bool {
        (a.decoder === b.decoder && a.rep == b.rep) || a.numbers == b.numbers
    }
}

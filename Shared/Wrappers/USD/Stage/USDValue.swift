/// An attribute or metadata value, reduced to what the reader needs. Numeric scalars,
/// vectors, matrices and arrays of them are flattened into `numbers` (matrices row-major).
public enum USDValue: Sendable, Equatable {
    case bool(Bool)
    case number(Double)
    case numbers([Double])
    /// A numeric array still in its layer's bytes, decoded when asked (`asNumbers`); equal
    /// to another lazy array with the same numbers.
    case lazyNumbers(LazyNumbers)
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
        case .lazyNumbers(let lazy): lazy.numbers
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
        case .lazyNumbers(let lazy): .array(lazy.numbers.map { .number($0) })
        case .string(let value), .asset(let value), .path(let value): .string(value)
        case .strings(let values), .assets(let values), .paths(let values): .array(values.map { .string($0) })
        case .dictionary(let values): .object(values.sorted { $0.key < $1.key }.map { ($0.key, $0.value.jsonObject) })
        case .none: .null
        }
    }
}

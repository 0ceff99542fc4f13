import Foundation

/// JSON text bound to a `json`/`jsonb` parameter or column.
public struct PostgresJSON: Sendable, Hashable, PostgresBindable, PostgresDecodable {
    public var text: String
    public init(_ text: String) { self.text = text }

    /// Encodes a value with `JSONEncoder`.
    public init(encoding value: some Encodable, encoder: JSONEncoder = JSONEncoder()) throws {
        text = String(decoding: try encoder.encode(value), as: UTF8.self)
    }

    /// Decodes the JSON text with `JSONDecoder`.
    public func decode<T: Decodable>(_ type: T.Type, decoder: JSONDecoder = JSONDecoder()) throws -> T {
        try decoder.decode(type, from: Data(text.utf8))
    }

    public var postgresText: String? { text }
    public static func decode(postgresText text: String) -> PostgresJSON? { PostgresJSON(text) }
}

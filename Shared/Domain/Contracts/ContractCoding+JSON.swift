import Foundation
import JSON

extension JSONWriter {
    /// A timestamp as `ContractCoding.encoder` writes it (`2026-11-30T08:15:30.123Z`).
    public mutating func timestamp(_ date: Date) {
        rawValue { bytes in
            bytes.append(UInt8(ascii: "\""))
            ContractCoding.appendTimestamp(date, to: &bytes)
            bytes.append(UInt8(ascii: "\""))
        }
    }
}

extension JSONValue {
    /// Re-decodes this value as a typed value, with the contracts' coding.
    public func decode<T: Decodable>(_ type: T.Type) throws -> T {
        try ContractCoding.decoder.decode(T.self, from: ContractCoding.encoder.encode(self))
    }
}

/// A `reading.events.v2` record the aggregator cannot use; it goes to the dead-letter topic.
public struct AnalyticsRecordError: Error, Sendable, CustomStringConvertible {
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// The value is not a `ReadingEventRecord` in JSON.
        public static let undecodable = Code(rawValue: "undecodable")
        /// A schema version this aggregator does not know.
        public static let unsupportedSchema = Code(rawValue: "unsupported_schema")
        /// A field is missing or out of range.
        public static let invalidField = Code(rawValue: "invalid_field")
    }

    public var code: Code
    public var message: String
    /// What is wrong in the record (`field`); where it came from is the dead letter's origin.
    public var context: [String: String]
    /// Never: the same bytes fail the same way.
    public var isRetriable: Bool { false }

    public init(code: Code, message: String, context: [String: String] = [:]) {
        self.code = code
        self.message = message
        self.context = context
    }

    public var description: String {
        let where_ = context.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: " ")
        return "\(code): \(message)" + (where_.isEmpty ? "" : " (\(where_))")
    }
}

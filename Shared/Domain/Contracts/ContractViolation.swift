/// A value that breaks its record's rule: the code the app acts on (seed `000_*` §11), the
/// field it is about, and a sentence saying what the rule is. Thrown by a record's
/// `validate()`, which every producer and consumer of the record calls, so that a record one
/// stage accepts, every stage accepts.
public struct ContractViolation: Error, Sendable, Equatable, CustomStringConvertible {
    public var code: ErrorCode
    public var field: String
    public var message: String

    public init(code: ErrorCode, field: String, message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    /// Never retriable: the same value breaks the same rule.
    public var isRetriable: Bool { false }

    /// The code and the message; the field is named in the message.
    public var description: String { "\(code): \(message)" }
}

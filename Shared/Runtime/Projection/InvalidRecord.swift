/// What a projection's `decode` throws for a record that parsed but breaks the contract's
/// rules (an unsupported schema version, an id out of bounds): the runner dead-letters it with
/// this description as the reason.
public struct InvalidRecord: Error, CustomStringConvertible {
    public let description: String

    public init(description: String) {
        self.description = description
    }
}

import Contracts

/// A channel name (`room:123`, `user:u1`) and the wire topic carrying it (`realtime:room:123`).
public struct ChannelName: Sendable, Hashable, CustomStringConvertible {
    public enum Kind: Sendable, Hashable {
        case room(String)
        case user(String)
        /// Any other name: nobody may join it, but it can still be addressed by producers.
        case other
    }

    public static let topicPrefix = "realtime:"

    public let name: String

    /// The longest channel name in UTF-8 bytes: `room:` or `user:` and an acceptable identifier.
    /// A name follows the identifier rules too (no whitespace, no control characters).
    public static let maxUTF8Length = "room:".utf8.count + Identifier.maxUTF8Length

    public init?(_ name: String) {
        guard Identifier.isAcceptable(name, maxUTF8Length: Self.maxUTF8Length) else { return nil }
        self.name = name
    }

    /// The channel of a wire topic; nil when the topic is not `realtime:<name>`.
    public init?(topic: String) {
        guard topic.hasPrefix(Self.topicPrefix) else { return nil }
        self.init(String(topic.dropFirst(Self.topicPrefix.count)))
    }

    public var topic: String { Self.topicPrefix + name }

    public var kind: Kind {
        if let id = suffix(after: "room:") { return .room(id) }
        if let id = suffix(after: "user:") { return .user(id) }
        return .other
    }

    /// `room:{id}`; nil when `id` is not an acceptable identifier (too long, whitespace, controls).
    public static func room(_ id: String) -> ChannelName? { Identifier.isAcceptable(id) ? ChannelName("room:" + id) : nil }
    /// `user:{id}`; nil when `id` is not an acceptable identifier.
    public static func user(_ id: String) -> ChannelName? { Identifier.isAcceptable(id) ? ChannelName("user:" + id) : nil }

    private func suffix(after prefix: String) -> String? {
        guard name.hasPrefix(prefix) else { return nil }
        let id = String(name.dropFirst(prefix.count))
        return id.isEmpty ? nil : id
    }

    public var description: String { name }
}

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

    public init?(_ name: String) {
        guard !name.isEmpty, name.utf8.count <= 255 else { return nil }
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

    public static func room(_ id: String) -> ChannelName { ChannelName("room:" + id)! }
    public static func user(_ id: String) -> ChannelName { ChannelName("user:" + id)! }

    private func suffix(after prefix: String) -> String? {
        guard name.hasPrefix(prefix) else { return nil }
        let id = String(name.dropFirst(prefix.count))
        return id.isEmpty ? nil : id
    }

    public var description: String { name }
}

import Synchronization

/// A consumer group and the topics it reads.
public struct ConsumerGroup: Sendable, Hashable {
    public let groupID: String
    public let topics: [String]

    public init(groupID: String, topics: [String]) {
        self.groupID = groupID
        self.topics = topics
    }
}

/// The consumer groups a process runs, listed by each projection from the start of its run
/// (before its group has formed) until it stops. `backbone dev`, whose embedded broker forgets
/// every record at exit, waits for them to process what was accepted before it stops them, and
/// keeps its journal's copies until they have; it hands one to its services through
/// `CommonConfiguration.runningGroups`.
public final class RunningConsumerGroups: Sendable {
    public struct Registration: Sendable, Hashable {
        let id: UInt64
    }

    private let state = Mutex<(next: UInt64, groups: [UInt64: ConsumerGroup])>((0, [:]))

    public init() {}

    public func register(_ group: ConsumerGroup) -> Registration {
        state.withLock { state in
            state.next += 1
            state.groups[state.next] = group
            return Registration(id: state.next)
        }
    }

    public func unregister(_ registration: Registration) {
        _ = state.withLock { $0.groups.removeValue(forKey: registration.id) }
    }

    /// The distinct groups running now.
    public var groups: [ConsumerGroup] {
        Array(Set(state.withLock { Array($0.groups.values) }))
    }
}

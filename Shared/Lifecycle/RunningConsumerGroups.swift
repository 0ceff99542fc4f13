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

    private let state = Mutex<(next: UInt64, groups: [UInt64: ConsumerGroup], assigned: Set<String>)>((0, [:], []))

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

    /// Notes that `groupID` formed: its member was given its partitions (and found their stored
    /// positions), so a record produced from now on is read.
    public func markAssigned(_ groupID: String) {
        _ = state.withLock { $0.assigned.insert(groupID) }
    }

    /// The running groups whose member has not been given its partitions yet. `backbone dev`
    /// announces itself once this is empty: a record produced before a group formed would
    /// otherwise wait for it (seconds on a fresh broker), and a room's first join with it.
    public var forming: [ConsumerGroup] {
        state.withLock { state in Set(state.groups.values.filter { !state.assigned.contains($0.groupID) }) }
            .sorted { $0.groupID < $1.groupID }
    }
}

import Synchronization

/// The projections running in this process — their consumer groups and topics — so that
/// `backbone dev`, whose embedded broker forgets every record at exit, can wait for them to
/// process what was accepted before it stops them (`StoredOffsets.backlog(of:)`). A runner
/// is listed from the start of `ProjectionRunner.run()`, before its group has formed.
public enum RunningProjections {
    public struct Group: Sendable, Hashable {
        public let groupID: String
        public let topics: [String]

        public init(groupID: String, topics: [String]) {
            self.groupID = groupID
            self.topics = topics
        }
    }

    public struct Registration: Sendable, Hashable {
        let id: UInt64
    }

    private static let state = Mutex<(next: UInt64, groups: [UInt64: Group])>((0, [:]))

    static func register(groupID: String, topics: [String]) -> Registration {
        state.withLock { state in
            state.next += 1
            state.groups[state.next] = Group(groupID: groupID, topics: topics)
            return Registration(id: state.next)
        }
    }

    static func unregister(_ registration: Registration) {
        _ = state.withLock { $0.groups.removeValue(forKey: registration.id) }
    }

    /// The distinct groups running now.
    public static var groups: [Group] {
        Array(Set(state.withLock { Array($0.groups.values) }))
    }
}

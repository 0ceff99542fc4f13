import Lifecycle
import Synchronization

/// The consumer groups a process runs, listed by each projection from the start of its run
/// (before its group has formed) until it stops. `backbone dev`, whose embedded broker forgets
/// every record at exit, waits for them to process what was accepted before it stops them, and
/// keeps its journal's copies until they have; it hands one to its services as their
/// `ServiceContext.consumerGroupObserver`.
final class RunningConsumerGroups: ConsumerGroupObserver {
    private let state = Mutex<(next: UInt64, groups: [UInt64: ConsumerGroup], assigned: Set<String>)>((0, [:], []))

    func memberStarted(_ group: ConsumerGroup) -> UInt64 {
        state.withLock { state in
            state.next += 1
            state.groups[state.next] = group
            return state.next
        }
    }

    func memberStopped(_ token: UInt64) {
        _ = state.withLock { $0.groups.removeValue(forKey: token) }
    }

    /// The distinct groups running now.
    var groups: [ConsumerGroup] {
        Array(Set(state.withLock { Array($0.groups.values) }))
    }

    /// Notes that `groupID` formed: its member was given its partitions (and found their stored
    /// positions), so a record produced from now on is read.
    func groupAssigned(_ groupID: String) {
        _ = state.withLock { $0.assigned.insert(groupID) }
    }

    /// The running groups whose member has not been given its partitions yet. `backbone dev`
    /// announces itself once this is empty: a record produced before a group formed would
    /// otherwise wait for it (seconds on a fresh broker), and a room's first join with it.
    var forming: [ConsumerGroup] {
        state.withLock { state in Set(state.groups.values.filter { !state.assigned.contains($0.groupID) }) }
            .sorted { $0.groupID < $1.groupID }
    }
}

import Hashing
import Synchronization

/// The subjects (user ids) whose tokens are refused although their signature is good: the
/// accounts this service erased, held as the hex SHA-256 of the id (`hash`). A service fills
/// it from its own deleted-users table, so checking a token costs one atomic load while
/// nobody was erased, and a hash and a set lookup after.
public final class RevokedSubjects: Sendable {
    private let subjects = Mutex<(set: Set<String>, changes: Int)>(([], 0))
    private let count = Atomic<Int>(0)

    public init() {}

    /// The hex SHA-256 of a subject: how erased users are named everywhere.
    public static func hash(_ subject: String) -> String { Digest.hex(Digest.sha256(Array(subject.utf8))) }

    public func contains(_ subject: String) -> Bool {
        guard count.load(ordering: .acquiring) > 0 else { return false }
        let hash = Self.hash(subject)
        return subjects.withLock { $0.set.contains(hash) }
    }

    /// Adds subjects by their hashes (`hash`).
    public func insert<S: Sequence>(hashes more: S) where S.Element == String {
        subjects.withLock { state in
            state.set.formUnion(more)
            state.changes += 1
            count.store(state.set.count, ordering: .releasing)
        }
    }

    /// How many times `insert` and `remove` changed the set: taken before reading the table a
    /// `replace` refreshes it from.
    public var changes: Int { subjects.withLock { $0.changes } }

    /// Replaces the whole set (a refresh from the table that lists them) — unless it changed
    /// since `changes` was taken before that table was read: a removal made meanwhile (a
    /// cancelled deletion) must not come back from a read that began before it. Returns whether
    /// it replaced.
    @discardableResult
    public func replace<S: Sequence>(hashes all: S, unlessChangedSince changes: Int? = nil) -> Bool where S.Element == String {
        subjects.withLock { state in
            if let changes, state.changes != changes { return false }
            state.set = Set(all)
            count.store(state.set.count, ordering: .releasing)
            return true
        }
    }

    public func remove(hash: String) {
        subjects.withLock { state in
            state.set.remove(hash)
            state.changes += 1
            count.store(state.set.count, ordering: .releasing)
        }
    }

    public var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }
}

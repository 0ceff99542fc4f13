import Hashing
import Synchronization

/// The subjects (user ids) whose tokens are refused although their signature is good: the
/// accounts this service erased, held as the hex SHA-256 of the id (`hash`). A service fills
/// it from its own deleted-users table, so checking a token costs one atomic load while
/// nobody was erased, and a hash and a set lookup after.
public final class RevokedSubjects: Sendable {
    private let subjects = Mutex<Set<String>>([])
    private let count = Atomic<Int>(0)

    public init() {}

    /// The hex SHA-256 of a subject: how erased users are named everywhere.
    public static func hash(_ subject: String) -> String { Digest.hex(Digest.sha256(Array(subject.utf8))) }

    public func contains(_ subject: String) -> Bool {
        guard count.load(ordering: .acquiring) > 0 else { return false }
        let hash = Self.hash(subject)
        return subjects.withLock { $0.contains(hash) }
    }

    /// Adds subjects by their hashes (`hash`).
    public func insert<S: Sequence>(hashes more: S) where S.Element == String {
        subjects.withLock { set in
            set.formUnion(more)
            count.store(set.count, ordering: .releasing)
        }
    }

    /// Replaces the whole set (a refresh from the table that lists them).
    public func replace<S: Sequence>(hashes all: S) where S.Element == String {
        subjects.withLock { set in
            set = Set(all)
            count.store(set.count, ordering: .releasing)
        }
    }

    public func remove(hash: String) {
        subjects.withLock { set in
            set.remove(hash)
            count.store(set.count, ordering: .releasing)
        }
    }

    public var isEmpty: Bool { count.load(ordering: .acquiring) == 0 }
}

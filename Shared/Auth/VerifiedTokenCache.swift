import Synchronization

/// The claims of tokens whose header and signature were verified, keyed by the token text.
///
/// A token's claims follow from its bytes and the codec's secret alone, so a token seen
/// before needs neither the HMAC nor the JSON parse again; the time checks (`exp`, `nbf`)
/// are not cached and run on every use. Bounded: once `capacity` tokens are held the cache
/// starts over, so a flood of distinct tokens costs memory of at most `capacity` entries.
final class VerifiedTokenCache: Sendable {
    /// Tokens longer than this are verified every time and never stored.
    static let maxTokenBytes = 4_096

    private let capacity: Int
    private let entries = Mutex<[String: JWTClaims]>([:])

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    func claims(for token: String) -> JWTClaims? {
        guard capacity > 0 else { return nil }
        return entries.withLock { $0[token] }
    }

    func store(_ claims: JWTClaims, for token: String) {
        guard capacity > 0, token.utf8.count <= Self.maxTokenBytes else { return }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = claims
        }
    }
}

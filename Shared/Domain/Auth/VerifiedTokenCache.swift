import Synchronization

/// The claims of tokens whose header and signature were verified, keyed by the token text.
///
/// A token's claims follow from its bytes and the codec's secret alone, so a token seen
/// before needs neither the signature check nor the JSON parse again; the time checks (`exp`,
/// `nbf`) are not cached and run on every use. A token checked with a key of the key set is
/// kept with the set's generation, and checked again once another set is installed (a key
/// the provider withdrew no longer vouches for it). Bounded: once `capacity` tokens are held
/// the cache starts over, so a flood of distinct tokens costs memory of at most `capacity`
/// entries.
final class VerifiedTokenCache: Sendable {
    /// Tokens longer than this are verified every time and never stored.
    static let maxTokenBytes = 4_096

    private let capacity: Int
    private struct Entry {
        var claims: JWTClaims
        /// `JSONWebKeyring.generation` when a key of the set checked the token; nil for the secret.
        var keyGeneration: Int?
    }

    private let entries = Mutex<[String: Entry]>([:])

    init(capacity: Int) {
        self.capacity = max(0, capacity)
    }

    /// The claims of `token`, unless it was checked with a key set other than the one of
    /// `keyGeneration` (the current one).
    func claims(for token: String, keyGeneration: Int) -> JWTClaims? {
        guard capacity > 0, let entry = entries.withLock({ $0[token] }) else { return nil }
        if let checked = entry.keyGeneration, checked != keyGeneration { return nil }
        return entry.claims
    }

    func store(_ claims: JWTClaims, keyGeneration: Int?, for token: String) {
        guard capacity > 0, token.utf8.count <= Self.maxTokenBytes else { return }
        entries.withLock { entries in
            if entries.count >= capacity { entries.removeAll(keepingCapacity: true) }
            entries[token] = Entry(claims: claims, keyGeneration: keyGeneration)
        }
    }
}

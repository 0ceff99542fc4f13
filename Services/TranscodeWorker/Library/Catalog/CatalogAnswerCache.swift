import Foundation
import HTTPRouting
import Synchronization

/// Recently rendered catalog answers, per caller and query. An answer lives until the read
/// model changes (the projection's commit bumps the generation) or `ttl` passes — well
/// inside the presigned URLs' lifetime, so a cached link is never close to expiry. Bounded:
/// when full, everything is dropped (the feed's few hot queries come right back).
final class CatalogAnswerCache: Sendable {
    private struct Entry {
        var body: [UInt8]
        var headers: HTTPHeaders
        var generation: UInt64
        var expires: ContinuousClock.Instant
    }

    private struct State {
        var generation: UInt64 = 0
        var entries: [String: Entry] = [:]
    }

    private let state = Mutex(State())
    let ttl: Duration
    let capacity: Int

    init(ttl: Duration, capacity: Int) {
        self.ttl = ttl
        self.capacity = capacity
    }

    var isEnabled: Bool { ttl > .zero && capacity > 0 }

    /// The generation an answer being computed now belongs to (read before querying).
    var generation: UInt64 { state.withLock { $0.generation } }

    /// The read model changed: every cached answer is stale.
    func invalidate() {
        state.withLock { state in
            state.generation &+= 1
            state.entries.removeAll(keepingCapacity: true)
        }
    }

    func answer(_ key: String) -> ([UInt8], HTTPHeaders)? {
        guard isEnabled else { return nil }
        let now = ContinuousClock.now
        return state.withLock { state in
            guard let entry = state.entries[key], entry.generation == state.generation, entry.expires > now else { return nil }
            return (entry.body, entry.headers)
        }
    }

    func store(_ key: String, body: [UInt8], headers: HTTPHeaders, generation: UInt64) {
        guard isEnabled else { return }
        let expires = ContinuousClock.now + ttl
        state.withLock { state in
            guard generation == state.generation else { return }
            if state.entries.count >= capacity { state.entries.removeAll(keepingCapacity: true) }
            state.entries[key] = Entry(body: body, headers: headers, generation: generation, expires: expires)
        }
    }
}

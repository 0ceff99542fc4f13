import ServiceLogging
import Lifecycle

/// A table of changes committed with a read model and still to be published.
///
/// The service writes an entry in the same transaction as the change it announces; its
/// after-commit publish takes it out. What a crash or a broker outage left behind is
/// published by an ``OutboxRelay``.
public protocol Outbox: Sendable {
    /// Publishes up to `limit` entries left unpublished for at least `grace`, oldest first,
    /// waits for the broker's acknowledgement and takes them out; returns how many went out.
    func publishPending(olderThan grace: Duration, limit: Int) async throws -> Int
}

/// The one relay loop over an ``Outbox``: every `interval`, publishes whatever has waited
/// longer than `grace`, oldest first, until nothing is left; failures are logged and retried
/// on the next round, never dropped.
public struct OutboxRelay<Source: Outbox>: Sendable {
    public let name: String
    let outbox: Source
    let interval: Duration
    let grace: Duration
    let limit: Int
    let logger: Logger

    public init(name: String, outbox: Source, interval: Duration, grace: Duration = .seconds(2), limit: Int = 1_000,
                logger: Logger) {
        self.name = name
        self.outbox = outbox
        self.interval = interval
        self.grace = grace
        self.limit = limit
        self.logger = logger
    }

    public func run() async throws {
        var logger = self.logger
        logger[metadataKey: "outbox"] = name
        try await PeriodicTask(name: "outbox-relay-\(name)", every: interval, failure: "outbox relay failed; will retry",
                               logger: logger) { try await relayPending() }.run()
    }

    /// Publishes everything pending past the grace period; returns how many entries went out.
    @discardableResult
    public func relayPending() async throws -> Int {
        var published = 0
        while !Task.isCancelled {
            let count = try await outbox.publishPending(olderThan: grace, limit: limit)
            guard count > 0 else { break }
            if grace > .zero {
                logger.notice("published outbox entries left behind", metadata: ["outbox": "\(name)", "outbox.count": "\(count)"])
            }
            published += count
            if count < limit { break }
        }
        return published
    }
}

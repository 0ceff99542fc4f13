import Kafka
import Postgres
import ServiceLogging

/// A Kafka → Postgres read model, run by a `ProjectionRunner`.
///
/// The runner hands each batch to `apply` inside one transaction that also advances the
/// consumer group's stored offsets, so the read model and its position move together:
/// a crash at any point replays exactly the records whose effects were rolled back.
public protocol Projection: Sendable {
    associatedtype Event: Sendable
    associatedtype Effects: Sendable

    /// Decodes and validates one record. A thrown error sends the record to `<topic>.dlq`
    /// and processing continues behind it.
    func decode(_ record: KafkaConsumerRecord) throws -> Event

    /// Applies a batch (in offset order within each partition) inside the batch transaction.
    /// Records may be seen again after a crash: apply must be idempotent per record (e.g.
    /// an event log with a unique id), which is what makes the whole effectively-once.
    func apply(_ events: [ProjectedEvent<Event>], in connection: PostgresConnection) async throws -> Effects

    /// Runs after the transaction committed (e.g. publish change notifications).
    func afterCommit(_ effects: Effects) async throws

    /// Combines the effects of consecutive committed batches (in commit order) before their
    /// after-commit work runs. When that work waits on a round trip (a publish waiting for
    /// the broker's acknowledgement), batches that commit meanwhile are handed over together,
    /// so the round trip is paid once for all of them. Default: no combining.
    func combine(_ effects: [Effects]) -> [Effects]
}

extension Projection {
    public func combine(_ effects: [Effects]) -> [Effects] { effects }
}

extension Projection where Effects == Void {
    public func afterCommit(_ effects: Void) async throws {}
}

/// A decoded event with the position it came from.
public struct ProjectedEvent<Event: Sendable>: Sendable {
    public var event: Event
    public var topic: String
    public var partition: Int32
    public var offset: Int64
    /// The record's trace (its `traceparent` header), to pass on to what the event produces.
    public var trace: TraceContext?

    public init(event: Event, topic: String, partition: Int32, offset: Int64, trace: TraceContext? = nil) {
        self.event = event
        self.topic = topic
        self.partition = partition
        self.offset = offset
        self.trace = trace
    }
}

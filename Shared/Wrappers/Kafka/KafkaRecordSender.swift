/// What a service sends records through: a `KafkaProducer`, or a decorator around one that
/// adds what a particular broker needs (`backbone dev` keeps a copy of what its in-memory
/// broker acknowledged). Services depend on this, so that a service run against a real cluster
/// carries nothing of the development broker.
public protocol KafkaRecordSender: Sendable {
    /// Produces all records, then waits for all acknowledgements. Results are in input order.
    func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>]
    /// Delivers what is queued (within the delivery timeout) and stops; sends during or after
    /// it fail with `.shutdown`. Safe to call more than once.
    func shutdown() async
}

extension KafkaRecordSender {
    /// Produces one record and waits for the broker's acknowledgement.
    /// - Throws: `KafkaError` if the record could not be delivered (e.g. `.messageTimedOut` when
    ///   no broker acknowledged it within the delivery timeout, `.shutdown` after `shutdown()`).
    public func send(_ record: KafkaProducerRecord) async throws(KafkaError) -> KafkaDeliveryReport {
        try await send([record])[0].get()
    }
}

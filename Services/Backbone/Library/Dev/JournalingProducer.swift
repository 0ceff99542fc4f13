import Kafka

/// A producer whose acknowledged records are kept in `backbone dev`'s broker journal before
/// its caller is told they were delivered, and whose sends wait for the embedded broker to
/// have room for them (`DevBrokerJournal`). What `backbone dev` and the operator commands run
/// against its broker send through; a service run against a real cluster sends through a
/// plain `KafkaProducer`.
struct JournalingProducer: KafkaRecordSender {
    let producer: KafkaProducer
    let journal: DevBrokerJournal

    /// Admitted (else failed unsent, `.backlogFull`), sent, and the acknowledged records kept
    /// (else failed, `.journalUnavailable`: what was not kept is not reported sent).
    func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] {
        guard !records.isEmpty else { return [] }
        do { try await journal.admit(records) } catch {
            let failure = error as? KafkaError ?? KafkaError(code: .backlogFull, message: "not sent: \(error)", isRetriable: true)
            return records.map { _ in .failure(failure) }
        }
        defer { journal.settle(records) }
        let results = await producer.send(records)
        var deliveries: [DevBrokerJournal.Delivery] = []
        deliveries.reserveCapacity(records.count)
        for (record, result) in zip(records, results) {
            if case .success(let report) = result { deliveries.append(.init(record: record, report: report)) }
        }
        guard !deliveries.isEmpty else { return results }
        do {
            try await journal.keep(deliveries)
            return results
        } catch {
            let failure = KafkaError(code: .journalUnavailable, message: "acknowledged, but the broker journal could not keep it: \(error)",
                                     isRetriable: true)
            return results.map { result in result.flatMap { _ in .failure(failure) } }
        }
    }

    func shutdown() async {
        await producer.shutdown()
    }
}

extension KafkaError.Code {
    /// The embedded broker acknowledged the record but the broker journal could not keep a
    /// copy of it, so it is not reported delivered.
    static let journalUnavailable = KafkaError.Code("journal_unavailable")
    /// The embedded broker holds as many records not yet processed as it keeps without
    /// dropping some; the records were not sent.
    static let backlogFull = KafkaError.Code("backlog_full")
}

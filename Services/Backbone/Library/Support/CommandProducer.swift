import Foundation
import Kafka
import Postgres
import ServiceLogging

/// The producer of an operator command that sends records (`republish`, `dlq replay`).
///
/// Against the broker of a running `backbone dev` it produces through that stack's journal
/// (`DevBrokerJournal.attach`): that broker keeps records in memory only and drops the oldest
/// beyond 5 MB a partition, processed or not, so what the command sends is kept until the
/// stack's consumers processed it (a `kill -9` of the stack does not lose it), and a send waits
/// for room while the consumers are behind, as the stack's own sends do. Against any other
/// broker it is a plain producer.
struct CommandProducer {
    let producer: any KafkaRecordSender
    let journal: DevBrokerJournal?
    /// The client `open` made for the journal, closed by `shutdown()`.
    private let ownDatabase: PostgresClient?

    /// - Parameter database: the command's client of `DATABASE_URL`; nil: one of its own when
    ///   `DATABASE_URL` is set (no journal is looked for without it).
    static func open(clientID: String, settings: KafkaSettings, database: PostgresClient?) async throws -> CommandProducer {
        var ownDatabase: PostgresClient?
        if database == nil, let url = DevEnvironment.resolved()["DATABASE_URL"], !url.isEmpty {
            ownDatabase = PostgresClient(configuration: PostgresConfiguration(url: url, maxConnections: 2, applicationName: clientID),
                                         logger: settings.logger)
        }
        var journal: DevBrokerJournal?
        if let client = database ?? ownDatabase {
            do {
                journal = try await DevBrokerJournal.attach(brokers: settings.brokers, database: client, logger: settings.logger)
            } catch {
                FileHandle.standardError.write(Data("""
                    backbone: cannot tell whether \(settings.brokers) is the broker of a `backbone dev` whose journal keeps \
                    what is sent (\(error)); sending without the journal

                    """.utf8))
            }
        }
        do {
            let plain = try KafkaProducer(configuration: KafkaProducerConfiguration(
                bootstrapServers: settings.brokers, clientID: clientID, deliveryTimeout: .seconds(30)), logger: settings.logger)
            let producer: any KafkaRecordSender = journal.map { JournalingProducer(producer: plain, journal: $0) } ?? plain
            return CommandProducer(producer: producer, journal: journal, ownDatabase: ownDatabase)
        } catch {
            await journal?.detach()
            await ownDatabase?.close()
            throw CommandError(code: .kafkaUnavailable, message: "cannot start a producer: \(error.message)", context: settings.brokers)
        }
    }

    func send(_ records: [KafkaProducerRecord]) async -> [Result<KafkaDeliveryReport, KafkaError>] {
        await producer.send(records)
    }

    func shutdown() async {
        await producer.shutdown()
        await journal?.detach()
        await ownDatabase?.close()
    }
}

import DevInfrastructure
import Kafka
import Postgres
import ServiceLogging

/// What one service's test harness stands on: an embedded one-broker cluster, a fresh database
/// with the service's migrations, a client of it, and a producer and an admin of the cluster.
/// A harness subclasses it with its topics and helpers; `close()` releases all of it.
open class BrokerAndDatabase: @unchecked Sendable {
    // @unchecked: every stored property is an immutable Sendable value; subclasses add only such
    // and restate the conformance.
    public let cluster: EmbeddedKafkaCluster
    public let database: TestDatabase
    public let client: PostgresClient
    public let producer: KafkaProducer
    public let admin: KafkaAdmin

    public init(databasePrefix: String, migrations: [PostgresMigration]) async throws {
        cluster = try EmbeddedKafkaCluster(brokers: 1)
        database = try await TestDatabase.create(databasePrefix)
        client = database.client()
        producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .disabled)
        admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: .disabled)
        _ = try await PostgresMigrator(migrations: migrations, logger: .disabled).migrate(client)
    }

    public func close() async {
        await producer.shutdown()
        await client.close()
        await database.drop()
        cluster.shutdown()
    }
}

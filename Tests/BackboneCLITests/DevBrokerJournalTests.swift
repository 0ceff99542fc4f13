@testable import BackboneCLI
import BackboneTestSupport
import Contracts
import DevInfrastructure
import Foundation
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import Testing

/// `backbone dev`'s embedded broker keeps records in memory only; its journal is what a killed
/// run's unprocessed records come back from.
@Suite("backbone dev's broker journal", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct DevBrokerJournalTests {
    /// A database with every migration and the journal's table, dropped after `body`.
    func withDatabase(_ body: (PostgresClient) async throws -> Void) async throws {
        try await TestDatabase.with("journal") { client in
            _ = try await PostgresMigrator(migrations: ServiceCatalog.allMigrations, logger: .disabled).migrate(client)
            try await DevBrokerJournal.prepare(client)
            try await DevRecovery.prepare(client)
            try await body(client)
        }
    }

    func journaledBroker(_ client: PostgresClient, topics: [(String, Int32)], admissionWait: Duration = .seconds(5)) async throws
        -> (cluster: EmbeddedKafkaCluster, journal: DevBrokerJournal, producer: JournalingProducer) {
        let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: .disabled)
        for (topic, partitions) in topics { try cluster.createTopic(topic, partitions: partitions) }
        let identity = try await DevBrokerJournal.clusterIdentity(brokers: cluster.bootstrapServers, logger: .disabled)
        let journal = DevBrokerJournal(database: client, cluster: try #require(identity), admissionWait: admissionWait)
        let producer = JournalingProducer(
            producer: try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .disabled),
            journal: journal)
        return (cluster, journal, producer)
    }

    func journalRows(_ client: PostgresClient) async throws -> [(cluster: String, topic: String, partition: Int, offset: Int64)] {
        try await client.query("""
            SELECT cluster_id, topic, partition, "offset" FROM dev_broker_journal ORDER BY topic, partition, "offset"
            """).map { row in
            (try row.decode(String.self, "cluster_id"), try row.decode(String.self, "topic"), try row.decode(Int.self, "partition"),
             try row.decode(Int64.self, "offset"))
        }
    }

    @Test("""
        records sent through a journaled producer are kept before send returns; those every group reading their \
        topic processed are dropped; the rest go to the next broker once, in order, to the same partitions, byte for byte, \
        in their trace
        """)
    func keepPruneRepublish() async throws {
        try await withDatabase { client in
            let topics: [(String, Int32)] = [("t.a", 2), ("t.b", 1), ("t.a.dlq", 1)]
            let first = try await journaledBroker(client, topics: topics)
            // Values no text column could hold: NUL, 0xFF, tab, backslash, newline.
            func value(_ n: Int) -> [UInt8] { [0, 0xFF, 9, 92, 10] + Array("record \(n)".utf8) }
            var records: [KafkaProducerRecord] = (0..<20).map { KafkaProducerRecord(topic: "t.a", key: Array("k\($0 % 10)".utf8), value: value($0)) }
            records += (20..<25).map { KafkaProducerRecord(topic: "t.b", value: value($0)) }
            // A traced record's trace goes with its copy.
            let trace = try #require(TraceContext(traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"))
            records.append(KafkaProducerRecord(topic: "t.a.dlq", partition: 0, key: [1, 2], value: value(25), headers: [.trace(trace)]))
            let reports = try await first.producer.send(records).map { try $0.get() }
            #expect(try await journalRows(client).count == 26, "every record is kept by the time send returns")

            // g1 reads t.a and t.b and processed everything; g2 reads t.a: 3 records of partition 0,
            // and it has no position on partition 1.
            let high = Dictionary(grouping: reports, by: { "\($0.topic)/\($0.partition)" }).mapValues { $0.map(\.offset).max()! + 1 }
            for (topic, partition, next) in [("t.a", 0, high["t.a/0"]!), ("t.a", 1, high["t.a/1"]!), ("t.b", 0, high["t.b/0"]!)] {
                _ = try await client.execute("""
                    INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner, cluster_id) VALUES ('g1', $1, $2, $3, 'x', $4)
                    """, [topic, partition, next, first.journal.cluster])
            }
            _ = try await client.execute("""
                INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner, cluster_id) VALUES ('g2', 't.a', 0, 3, 'x', $1)
                """, [first.journal.cluster])
            let pruned = try await first.journal.prune(consuming: [.init(groupID: "g1", topics: ["t.a", "t.b"]),
                                                                   .init(groupID: "g2", topics: ["t.a"])])
            let left = try await journalRows(client)
            #expect(pruned == 5 + 3)
            #expect(left.filter { $0.topic == "t.a" && $0.partition == 0 }.map(\.offset) == Array(3..<high["t.a/0"]!))
            #expect(left.filter { $0.topic == "t.a" && $0.partition == 1 }.count == Int(high["t.a/1"]!))
            #expect(left.filter { $0.topic == "t.b" }.isEmpty)
            #expect(left.filter { $0.topic == "t.a.dlq" }.count == 1, "a topic nobody reads keeps its records")

            // The run is killed: its broker goes, the next run's broker is empty.
            await first.producer.shutdown()
            first.cluster.shutdown()
            let second = try await journaledBroker(client, topics: topics)
            defer { second.cluster.shutdown() }
            let expected = left.map { row in
                let index = reports.firstIndex { $0.topic == row.topic && Int($0.partition) == row.partition && $0.offset == row.offset }!
                return (records[index], row.partition)
            }
            let republished = try await DevBrokerJournal.republish(from: client, currentCluster: second.journal.cluster,
                                                                   through: second.producer)
            #expect(republished == ["t.a": left.count - 1, "t.a.dlq": 1])
            for topic in ["t.a", "t.a.dlq"] {
                let mine = expected.filter { $0.0.topic == topic }
                let read = try await TopicReader.read(topic, bootstrapServers: second.cluster.bootstrapServers, count: mine.count)
                for partition in Set(mine.map(\.1)) {
                    let want = mine.filter { $0.1 == partition }.map { [$0.0.key ?? [], $0.0.value] }
                    let got = read.filter { Int($0.partition) == partition }.map { [$0.key ?? [], $0.value] }
                    #expect(got == want, "\(topic)/\(partition): same records, same order")
                }
                if topic == "t.a.dlq" { #expect(read.first?.trace == trace, "the copy is sent again in its trace") }
            }
            let now = try await journalRows(client)
            #expect(now.count == left.count && now.allSatisfy { $0.cluster == second.journal.cluster },
                    "the new broker's copies replace the old ones")
            #expect(try await DevBrokerJournal.republish(from: client, currentCluster: second.journal.cluster, through: second.producer) == [:],
                    "nothing is published twice")

            // Once `backbone dlq replay` replayed a dead letter from this broker, its copy goes.
            let letter = try #require(now.first { $0.topic == "t.a.dlq" })
            _ = try await client.execute("""
                INSERT INTO dead_letter_replays (cluster_id, dlq_topic, dlq_partition, dlq_offset, original_topic, original_partition,
                                                 original_offset, error)
                VALUES ($1, $2, $3, $4, 't.a', 0, 0, 'replayed')
                """, [letter.cluster, letter.topic, letter.partition, letter.offset])
            #expect(try await second.journal.prune(consuming: []) == 1)
            #expect(try await journalRows(client).filter { $0.topic == "t.a.dlq" }.isEmpty)
            await second.producer.shutdown()
        }
    }

    @Test("a record the journal cannot keep is not reported delivered")
    func journalFailureFailsTheSend() async throws {
        try await withDatabase { client in
            let broker = try await journaledBroker(client, topics: [("t.a", 1)])
            defer { broker.cluster.shutdown() }
            _ = try await client.execute("DROP TABLE dev_broker_journal")
            let results = await broker.producer.send([KafkaProducerRecord(topic: "t.a", value: Array("x".utf8))])
            guard case .failure(let error) = results[0] else {
                Issue.record("the send succeeded without a copy")
                await broker.producer.shutdown()
                return
            }
            #expect(error.code == .journalUnavailable && error.isRetriable, "\(error)")
            await broker.producer.shutdown()
        }
    }

    @Test("""
        while a consumer lags, sends wait and then fail unsent rather than let the embedded broker drop records it \
        has not processed (a producer without the journal makes it drop them); once it catches up, sends go through
        """)
    func backlogAdmission() async throws {
        try await withDatabase { client in
            let broker = try await journaledBroker(client, topics: [("t.read", 1), ("t.unjournaled", 1)], admissionWait: .seconds(1))
            defer { broker.cluster.shutdown() }
            let admin = try KafkaAdmin(bootstrapServers: broker.cluster.bootstrapServers, logger: .disabled)
            let group = ConsumerGroup(groupID: "lagging", topics: ["t.read"])
            try await broker.journal.prune(consuming: [group])
            // The witness: without the journal, the broker drops the oldest records past its limit.
            let plain = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: broker.cluster.bootstrapServers),
                                          logger: .disabled)
            for _ in 0..<Self.sends { for result in await plain.send(Self.batch("t.unjournaled")) { _ = try result.get() } }
            await plain.shutdown()
            #expect(try await admin.watermarks(topic: "t.unjournaled", partition: 0).low > 0)

            let delivered = try await sendUntilRefused(broker.producer, topic: "t.read", admin: admin)

            // A send waiting for room goes through once the group processed what it held.
            let waiting = Task { await broker.producer.send(Self.batch("t.read")) }
            try await Task.sleep(for: .milliseconds(200))
            _ = try await client.execute("""
                INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner, cluster_id) VALUES ('lagging', 't.read', 0, $1, 'x', $2)
                """, [Int64(delivered), broker.journal.cluster])
            #expect(try await broker.journal.prune(consuming: [group]) == delivered)
            for result in await waiting.value { _ = try result.get() }
            await broker.producer.shutdown()
        }
    }

    /// 200 records of 1 KiB: one send of `sendUntilRefused`.
    static func batch(_ topic: String) -> [KafkaProducerRecord] {
        (0..<200).map { _ in KafkaProducerRecord(topic: topic, value: [UInt8](repeating: 0x61, count: 1024)) }
    }

    /// Sends of `batch` it takes to offer twice what the broker keeps of a partition.
    static let sends = 2 * DevBrokerJournal.brokerPartitionBytes / (200 * 1024)

    /// Sends `batch(topic)` (partition 0 of `topic`, whose readers process nothing) until the
    /// journal refuses one; expects the refusal before the broker dropped any record. Returns
    /// how many records were delivered.
    func sendUntilRefused(_ producer: any KafkaRecordSender, topic: String, admin: KafkaAdmin) async throws -> Int {
        var delivered = 0
        var refusal: KafkaError?
        for _ in 0..<Self.sends {
            let results = await producer.send(Self.batch(topic))
            if case .failure(let error) = results[0] {
                refusal = error
                #expect(results.allSatisfy { if case .failure = $0 { true } else { false } }, "a refused send sends none of its records")
                break
            }
            for result in results { _ = try result.get() }
            delivered += results.count
        }
        let error = try #require(refusal, "every send was admitted while nothing was processed")
        #expect(error.code == .backlogFull && error.isRetriable, "\(error)")
        let marks = try await admin.watermarks(topic: topic, partition: 0)
        #expect(marks.low == 0 && marks.high == Int64(delivered), "every delivered record is still in the broker: \(marks)")
        #expect(delivered * 1024 <= DevBrokerJournal.backlogLimit)
        return delivered
    }

    @Test("""
        an operator command producing from a process of its own to a dev stack's broker journals what it sends and \
        waits for the stack's consumers as the stack's sends do; to any other broker it produces without a journal
        """)
    func commandsJournalToTheStacksBroker() async throws {
        try await withDatabase { client in
            let stack = try await journaledBroker(client, topics: [("t.read", 1)])
            defer { stack.cluster.shutdown() }
            let settings = KafkaSettings(brokers: stack.cluster.bootstrapServers, logger: .disabled)
            let unregistered = try await CommandProducer.open(clientID: "backbone-test", settings: settings, database: client)
            #expect(unregistered.journal == nil, "a broker no dev stack registered")
            await unregistered.shutdown()

            // The stack registers its broker at start and its readers at each pruning pass.
            try await stack.journal.register()
            let group = ConsumerGroup(groupID: "lagging", topics: ["t.read"])
            try await stack.journal.prune(consuming: [group])
            let command = try await CommandProducer.open(clientID: "backbone-test", settings: settings, database: client)
            #expect(command.journal != nil)
            await command.shutdown()

            let guest = try #require(try await DevBrokerJournal.attach(brokers: stack.cluster.bootstrapServers, database: client,
                                                                       admissionWait: .seconds(1), logger: .disabled))
            let producer = JournalingProducer(
                producer: try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: stack.cluster.bootstrapServers),
                                            logger: .disabled),
                journal: guest)
            let admin = try KafkaAdmin(bootstrapServers: stack.cluster.bootstrapServers, logger: .disabled)
            let delivered = try await sendUntilRefused(producer, topic: "t.read", admin: admin)
            #expect(try await journalRows(client).count == delivered, "every record the command sent is kept")

            // Its own pruning sees the group move (the stack's pruner does not run here).
            let waiting = Task { await producer.send(Self.batch("t.read")) }
            try await Task.sleep(for: .milliseconds(200))
            _ = try await client.execute("""
                INSERT INTO consumer_offsets (group_id, topic, partition, next_offset, owner, cluster_id) VALUES ('lagging', 't.read', 0, $1, 'x', $2)
                """, [Int64(delivered), guest.cluster])
            for result in await waiting.value { _ = try result.get() }
            await producer.shutdown()
            await guest.detach()
            #expect(try await journalRows(client).map(\.offset) == Array(Int64(delivered)..<Int64(delivered + 200)),
                    "the processed copies are dropped, the rest kept")

            // Another broker, and a database no dev stack ran on.
            let other = try EmbeddedKafkaCluster(brokers: 1, logger: .disabled)
            defer { other.shutdown() }
            #expect(try await DevBrokerJournal.attach(brokers: other.bootstrapServers, database: client, logger: .disabled) == nil)
            let onBare = try await TestDatabase.with("nojournal") { bare in
                try await DevBrokerJournal.attach(brokers: stack.cluster.bootstrapServers, database: bare, logger: .disabled)
            }
            #expect(onBare == nil)
        }
    }

    @Test("""
        at start, the ledger forgets accepted ids that no event log holds and the journal does not bring back \
        (the app's resend of them is accepted); journaled ones, and ones logged in any spelling, stay remembered; \
        the next start checks only what was accepted since
        """)
    func recoveryForgetsOnlyWhatIsGone() async throws {
        try await withDatabase { client in
            let journaled = UUID().uuidString.lowercased(), gone = UUID().uuidString.lowercased()
            let processed = UUID().uuidString.lowercased(), upper = UUID().uuidString.lowercased()
            let mixed = UUID().uuidString.lowercased(), halfway = UUID().uuidString.lowercased()
            _ = try await client.query("SELECT ingest_accepted_events_maintain(30, 3)")
            for id in [journaled, gone, processed, upper, mixed, halfway] {
                _ = try await client.execute("INSERT INTO ingest_accepted_events (event_id, user_id) VALUES ($1::uuid, 'u1')", [id])
            }
            try await markProcessed(processed, in: client)
            // The logs keep the id as the app spelled it: iOS's UUID().uuidString is upper case.
            try await markProcessed(upper.uppercased(), in: client)
            try await markProcessed(String(mixed.prefix(8)).uppercased() + mixed.dropFirst(8), in: client)
            // In one log only: not processed by the other projection.
            _ = try await client.execute("""
                INSERT INTO progress_event_log (event_id, user_id, material_id, client_session_id, event_type, client_timestamp,
                                                sequence, active_seconds_delta, kafka_partition, kafka_offset)
                VALUES ($1, 'u1', 'm1', 's1', 'heartbeat', now(), 1, 1, 0, 0)
                """, [halfway])
            let value = Array(#"{"eventId":"\#(journaled.uppercased())","userId":"u1"}"#.utf8)
            _ = try await client.execute("""
                INSERT INTO dev_broker_journal (cluster_id, topic, partition, "offset", key, value) VALUES ('earlier run', $1, 0, 7, $2, $3)
                """, [Topics.readingEvents, Array("u1".utf8), value])
            // A value that is not JSON (not one ingest writes) is published back like any other, not a failed start.
            _ = try await client.execute("""
                INSERT INTO dev_broker_journal (cluster_id, topic, partition, "offset", key, value) VALUES ('earlier run', $1, 0, 8, NULL, $2)
                """, [Topics.readingEvents, [0xFF, 0x00, 0x7B] as [UInt8]])

            let cluster = try EmbeddedKafkaCluster(brokers: 1, logger: .disabled)
            defer { cluster.shutdown() }
            for topic in Topics.all { try cluster.createTopic(topic.name, partitions: topic.partitions) }
            let producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .disabled)
            let identity = try await DevBrokerJournal.clusterIdentity(brokers: cluster.bootstrapServers, logger: .disabled)
            let outcome = try await DevRecovery.recover(database: client, producer: producer, readingEventsTopic: Topics.readingEvents,
                                                        currentCluster: identity, logger: .disabled)
            #expect(outcome == .init(republished: [Topics.readingEvents: 2], lost: 2, checked: 6))
            let remembered = Set(try await client.query("SELECT event_id::text AS id FROM ingest_accepted_events").map { try $0.decode(String.self, "id") })
            #expect(remembered == [journaled, processed, upper, mixed])

            // Started again: only the id accepted since the last start is looked at.
            let later = UUID().uuidString.lowercased()
            _ = try await client.execute("INSERT INTO ingest_accepted_events (event_id, user_id) VALUES ($1::uuid, 'u1')", [later])
            let again = try await DevRecovery.recover(database: client, producer: producer, readingEventsTopic: Topics.readingEvents,
                                                      currentCluster: identity, logger: .disabled)
            await producer.shutdown()
            #expect(again == .init(republished: [:], lost: 1, checked: 1))
        }
    }

    /// Puts `eventID` in both projections' event logs, as if processed.
    func markProcessed(_ eventID: String, in client: PostgresClient) async throws {
        _ = try await client.execute("""
            INSERT INTO progress_event_log (event_id, user_id, material_id, client_session_id, event_type, client_timestamp,
                                            sequence, active_seconds_delta, kafka_partition, kafka_offset)
            VALUES ($1, 'u1', 'm1', 's1', 'heartbeat', now(), 1, 1, 0, 0)
            """, [eventID])
        _ = try await client.execute("""
            INSERT INTO analytics_events (event_id, user_id, client_session_id, material_id, event_type, active_seconds, client_ts,
                                          tz_offset_minutes, local_day, received_at)
            VALUES ($1, 'u1', 's1', 'm1', 'heartbeat', 1, now(), 0, current_date, now())
            """, [eventID])
    }
}

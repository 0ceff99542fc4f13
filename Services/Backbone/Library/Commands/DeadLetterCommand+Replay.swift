import Contracts
import Foundation
import JSON
import Kafka
import Postgres
import Projection
import ServiceLogging

extension DeadLetterCommand {
    /// A dead letter's place: its dead-letter topic, partition and offset.
    struct ReplayKey: Hashable {
        var topic: String
        var partition: Int32
        var offset: Int64

        init(topic: String, partition: Int32, offset: Int64) {
            self.topic = topic
            self.partition = partition
            self.offset = offset
        }

        init(_ letter: Letter) { self.init(topic: letter.dlq.topic, partition: letter.dlq.partition, offset: letter.offset) }
    }

    /// The dead letters of `topics` already replayed against this cluster; nil without `DATABASE_URL`.
    static func replayedKeys(topics: [String], settings: KafkaSettings, logger: Logger) async throws -> Set<ReplayKey>? {
        guard let url = DevEnvironment.resolved()["DATABASE_URL"], !url.isEmpty, !topics.isEmpty else { return nil }
        let cluster = try await OffsetsCommand.currentCluster(try settings.admin(), settings: settings)
        return try await DatabaseSettings.with(applicationName: "backbone-dlq", logger: logger) { client in
            try await replayed(topics: topics, cluster: cluster, client: client)
        }
    }

    static func replayed(topics: [String], cluster: String?, client: PostgresClient) async throws -> Set<ReplayKey> {
        let rows = try await client.query("""
            SELECT dlq_topic, dlq_partition, dlq_offset FROM dead_letter_replays WHERE cluster_id = $1 AND dlq_topic = ANY($2::text[])
            """, [cluster ?? "", topics])
        return Set(try rows.map { row in
            ReplayKey(topic: try row.decode(String.self, "dlq_topic"), partition: try row.decode(Int32.self, "dlq_partition"),
                      offset: try row.decode(Int64.self, "dlq_offset"))
        })
    }

    // MARK: - replay

    static func replay(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["where"])
        try args.only(["where", "dry-run", "json"])
        guard args.positional.count == 1, let name = args.positional.first else {
            throw CommandLineArguments.UsageError(description: "usage: backbone dlq replay TOPIC.dlq [--where ERROR] [--dry-run]")
        }
        let filter = args.value("where")
        let settings = try KafkaSettings.resolve(logger: logger)
        let topic = deadLetterTopic(name)
        try await requireTopic(topic, settings: settings)
        let admin = try settings.admin()
        let cluster = try await OffsetsCommand.currentCluster(admin, settings: settings)
        let json = CommandOutput.wantsJSON(args)
        return try await DatabaseSettings.with(applicationName: "backbone-dlq-replay", logger: logger) { client in
            let done = try await replayed(topics: [topic], cluster: cluster, client: client)
            let letters = try await read([topic], settings: settings, label: "reading \(topic)")
            let matching = letters.filter { $0.matches(filter) }
            let replayable = matching.compactMap(\.replayable)
            let unreadable = matching.count - replayable.count
            let pending = replayable.filter { !done.contains(ReplayKey($0.letter)) }
            var summary = Summary(dlq: topic, replayed: 0, alreadyReplayed: matching.count - unreadable - pending.count,
                                  notMatching: letters.count - matching.count, unreadable: unreadable, dryRun: args.flag("dry-run"),
                                  topics: Set(pending.map(\.record.originalTopic)).sorted())
            if summary.dryRun { (summary.replayed, summary.records) = (pending.count, Set(pending.map(\.origin)).count) }
            if !pending.isEmpty && !summary.dryRun {
                let existing = Set(try await settings.listTopics(admin).map(\.name))
                if let missing = summary.topics.first(where: { !existing.contains($0) }) {
                    throw CommandError(code: .unknownTopic, message: "the dead letters' origin topic no longer exists — create it first",
                                       context: missing)
                }
                (summary.replayed, summary.records) = try await produce(pending, dlq: topic, cluster: cluster, settings: settings,
                                                                        client: client)
            }
            print(json ? summary.json : summary.text)
            return 0
        }
    }

    struct Summary {
        var dlq: String
        var replayed: Int
        var alreadyReplayed: Int
        var notMatching: Int
        var unreadable: Int
        var dryRun: Bool
        var topics: [String]
        /// The records sent for `replayed` dead letters (fewer when several groups dead-lettered one record).
        var records = 0

        var json: String {
            "{\"dlq\":\(JSONString.quote(dlq)),\"\(dryRun ? "wouldReplay" : "replayed")\":\(replayed),\"alreadyReplayed\":\(alreadyReplayed),"
                + "\"notMatching\":\(notMatching),\"unreadable\":\(unreadable),\"records\":\(records),"
                + "\"topics\":[\(topics.map(JSONString.quote).joined(separator: ","))]}"
        }

        var text: String {
            var parts = ["\(alreadyReplayed) already replayed"]
            if notMatching > 0 { parts.append("\(notMatching) not matching --where") }
            if unreadable > 0 { parts.append("\(unreadable) not dead-letter records") }
            if records < replayed { parts.append("\(records) original record(s): several groups dead-lettered the same one") }
            let head = (dryRun ? "dry run: would replay " : "replayed ") + "\(replayed) record(s)"
            let target = topics.isEmpty ? "" : " to \(topics.joined(separator: ", "))"
            return head + target + " (" + parts.joined(separator: ", ") + ")"
        }
    }

    /// The record a dead letter came from: where it was and what it held (the same place on
    /// another broker's run is another record).
    struct Origin: Hashable {
        var topic: String
        var partition: Int32
        var offset: Int64
        var key: [UInt8]?
        var value: [UInt8]
    }

    /// Produces the original records, in chunks, recording each chunk as replayed once
    /// every record of it was acknowledged. A record that several groups dead-lettered goes
    /// back once (every group reads its topic). Returns how many dead letters were replayed and
    /// how many records that took.
    static func produce(_ letters: [Replayable], dlq: String, cluster: String?, settings: KafkaSettings,
                        client: PostgresClient) async throws -> (letters: Int, records: Int) {
        let producer = try await CommandProducer.open(clientID: "backbone-dlq-replay", settings: settings, database: client)
        let progress = CommandProgress(command: "dlq replay", total: letters.count)
        var sent = 0
        var sentOrigins = Set<Origin>()
        do {
            for start in stride(from: 0, to: letters.count, by: 500) {
                let chunk = Array(letters[start..<min(start + 500, letters.count)])
                let originals = chunk.filter { sentOrigins.insert($0.origin).inserted }
                for (replayable, result) in zip(originals, await producer.send(originals.map(\.original))) {
                    if case .failure(let error) = result {
                        let letter = replayable.letter
                        throw CommandError(code: .deliveryFailed, message: "\(error.message) (\(sent) earlier dead letters were replayed and recorded)",
                                           context: "\(dlq)[\(letter.dlq.partition)]@\(letter.offset) → \(replayable.record.originalTopic)",
                                           isRetriable: error.isRetriable)
                    }
                }
                _ = try await client.execute("""
                    INSERT INTO dead_letter_replays (cluster_id, dlq_topic, dlq_partition, dlq_offset, original_topic, original_partition,
                                                     original_offset, error)
                    SELECT $1, $2, * FROM unnest($3::int[], $4::bigint[], $5::text[], $6::int[], $7::bigint[], $8::text[])
                    ON CONFLICT DO NOTHING
                    """, [cluster ?? "", dlq, chunk.map { Int($0.letter.dlq.partition) }, chunk.map(\.letter.offset),
                          chunk.map(\.record.originalTopic), chunk.map { Int($0.record.partition) }, chunk.map(\.record.offset),
                          chunk.map(\.letter.error)])
                sent += chunk.count
                progress.advance(by: chunk.count)
            }
        } catch {
            await producer.shutdown()
            throw error
        }
        await producer.shutdown()
        progress.finish()
        return (sent, sentOrigins.count)
    }
}

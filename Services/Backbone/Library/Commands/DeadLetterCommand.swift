import Contracts
import Foundation
import JSON
import Kafka
import Postgres
import Projection
import ServiceLogging

/// `backbone dlq list|show|replay`: the dead-letter topics (`<topic>.dlq`), where the
/// projections set aside records they could not decode or apply (`DeadLetterRecord`: the
/// original record, its origin and the error).
enum DeadLetterCommand {
    static let help = """
    usage: backbone dlq list [TOPIC] [--json]
           backbone dlq show TOPIC.dlq [--where ERROR] [--limit N]
           backbone dlq replay TOPIC.dlq [--where ERROR] [--dry-run]

      list     per dead-letter topic and error: how many records, the oldest and newest failure,
               and how many were replayed (TOPIC: only that topic's DLQ)
      show     every dead letter as a JSON line: the error, the consumer group, the origin
               (topic, partition, offset), the original key and value, and whether it was replayed
      replay   after the cause is fixed: produce the original records (key, value and headers
               byte for byte: a traced record stays in its trace) to their origin topic again,
               where the projection applies them; each replayed dead letter is recorded in
               PostgreSQL (dead_letter_replays), so a second replay skips it. --where ERROR: only dead letters whose error contains ERROR
               (case-insensitive); --dry-run: count what would be replayed

    KAFKA_BROKERS and DATABASE_URL come from the environment or .backbone/dev.env.

    examples:
      backbone dlq list
      backbone dlq show reading.events.v2.dlq --where "apply failed" --limit 5
      backbone dlq replay reading.events.v2.dlq --where "apply failed"
    """

    static func run(_ arguments: [String], logger: Logger) async throws -> Int32 {
        if CommandOutput.help(arguments, help) { return 0 }
        let rest = Array(arguments.dropFirst())
        switch arguments.first {
        case "list": return try await list(rest, logger: logger)
        case "show": return try await show(rest, logger: logger)
        case "replay": return try await replay(rest, logger: logger)
        default: throw CommandLineArguments.UsageError(description: help)
        }
    }

    /// One record of a dead-letter topic, decoded.
    struct Letter {
        var dlq: KafkaTopicPartition
        var offset: Int64
        /// nil: the record is not a `DeadLetterRecord` (written by something else).
        var record: DeadLetterRecord?
        /// The dead letter's headers, which are the original record's (its `traceparent`).
        var headers: [KafkaHeader] = []

        var error: String { record?.error ?? "(not a dead-letter record)" }

        /// The original value's bytes.
        var value: [UInt8]? { record?.valueOriginal }

        /// This letter as one that can be sent back: a dead-letter record whose original value
        /// (and key, if any) decode; nil otherwise.
        var replayable: Replayable? {
            guard let record, let value = record.valueOriginal, record.key == nil || record.keyOriginal != nil else { return nil }
            return Replayable(letter: self, record: record,
                              origin: Origin(topic: record.originalTopic, partition: record.partition, offset: record.offset,
                                             key: record.keyOriginal, value: value),
                              headers: headers)
        }

        var isReplayable: Bool { replayable != nil }

        func matches(_ filter: String?) -> Bool {
            guard let filter else { return true }
            return error.range(of: filter, options: .caseInsensitive) != nil
        }
    }

    /// A letter that can be replayed, with its decoded record and the original it carries.
    struct Replayable {
        var letter: Letter
        var record: DeadLetterRecord
        var origin: Origin
        /// The original's headers, sent back with it: the replayed record stays in its trace.
        var headers: [KafkaHeader]

        /// The record to produce again.
        var original: KafkaProducerRecord {
            KafkaProducerRecord(topic: origin.topic, key: origin.key, value: origin.value, headers: headers)
        }
    }

    /// `TOPIC` or `TOPIC.dlq` as the dead-letter topic's name.
    static func deadLetterTopic(_ name: String) -> String { name.hasSuffix(".dlq") ? name : Topics.deadLetter(for: name) }

    /// Every record of the dead-letter topics, with progress on long reads.
    static func read(_ topics: [String], settings: KafkaSettings, label: String) async throws -> [Letter] {
        let plan = try await TopicReadPlan.make(topics: topics, partition: nil, from: .beginning, settings: settings)
        let total = plan.partitions.values.map { Int($0.high - $0.start) }.reduce(0, +)
        let progress = CommandProgress(command: label, total: total)
        var letters: [Letter] = []
        try await TopicReader(settings: settings).scan(topics: topics, plan: plan, follow: false) { record in
            letters.append(Letter(dlq: record.topicPartition, offset: record.offset,
                                  record: try? ContractCoding.decode(DeadLetterRecord.self, from: record.value), headers: record.headers))
            progress.advance()
            return true
        }
        progress.finish()
        return letters.sorted { ($0.dlq, $0.offset) < ($1.dlq, $1.offset) }
    }

    /// The dead-letter topic must exist; the error lists the ones that do.
    static func requireTopic(_ topic: String, settings: KafkaSettings) async throws {
        let names = try await settings.listTopics(try settings.admin()).map(\.name)
        guard names.contains(topic) else {
            let dlqs = names.filter { $0.hasSuffix(".dlq") }
            throw CommandError(code: .unknownTopic,
                               message: "no such dead-letter topic (dead-letter topics: \(dlqs.isEmpty ? "none" : dlqs.joined(separator: ", ")))",
                               context: topic)
        }
    }

    // MARK: - list

    static func list(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: [])
        try args.only(["json"])
        guard args.positional.count <= 1 else { throw CommandLineArguments.UsageError(description: "usage: backbone dlq list [TOPIC] [--json]") }
        let settings = try KafkaSettings.resolve(logger: logger)
        let topics: [String]
        if let name = args.positional.first {
            topics = [deadLetterTopic(name)]
            try await requireTopic(topics[0], settings: settings)
        } else {
            topics = try await settings.listTopics(try settings.admin()).map(\.name).filter { $0.hasSuffix(".dlq") }
        }
        let letters = topics.isEmpty ? [] : try await read(topics, settings: settings, label: "reading dead letters")
        let replayed = (try? await replayedKeys(topics: topics, settings: settings, logger: logger)) ?? nil
        struct Group { var count = 0; var replayed = 0; var oldest: Date?; var newest: Date?; var origin = ""; var consumerGroup = "" }
        var groups: [String: [String: Group]] = [:]
        for letter in letters {
            var group = groups[letter.dlq.topic, default: [:]][letter.error, default: Group()]
            group.count += 1
            if replayed?.contains(ReplayKey(letter)) == true { group.replayed += 1 }
            if let failedAt = letter.record?.failedAt {
                group.oldest = min(group.oldest ?? failedAt, failedAt)
                group.newest = max(group.newest ?? failedAt, failedAt)
            }
            group.origin = letter.record?.originalTopic ?? group.origin
            group.consumerGroup = letter.record?.consumerGroup ?? group.consumerGroup
            groups[letter.dlq.topic, default: [:]][letter.error] = group
        }
        let writer = LineWriter()
        func time(_ date: Date?) -> String { date.map(ContractCoding.formatTimestamp) ?? "-" }
        if CommandOutput.wantsJSON(args) {
            for topic in groups.keys.sorted() {
                for (error, group) in groups[topic]!.sorted(by: { $0.value.count > $1.value.count }) {
                    writer.write(line: Array(("{\"dlq\":\(JSONString.quote(topic)),\"originalTopic\":\(JSONString.quote(group.origin)),"
                        + "\"consumerGroup\":\(JSONString.quote(group.consumerGroup)),\"error\":\(JSONString.quote(error)),"
                        + "\"count\":\(group.count),\"replayed\":\(replayed == nil ? "null" : String(group.replayed)),"
                        + "\"oldest\":\(group.oldest.map { "\"\(time($0))\"" } ?? "null"),"
                        + "\"newest\":\(group.newest.map { "\"\(time($0))\"" } ?? "null")}").utf8))
                }
            }
        } else if groups.isEmpty {
            writer.write(topics.isEmpty ? "no dead-letter topics\n" : "no dead letters in \(topics.joined(separator: ", "))\n")
        } else {
            var cells = [["DLQ", "GROUP", "COUNT", "REPLAYED", "OLDEST", "NEWEST", "ERROR"]]
            for topic in groups.keys.sorted() {
                for (error, group) in groups[topic]!.sorted(by: { $0.value.count > $1.value.count }) {
                    let shown = error.count > 100 ? String(error.prefix(99)) + "…" : error
                    cells.append([topic, group.consumerGroup, String(group.count), replayed == nil ? "-" : String(group.replayed),
                                  time(group.oldest), time(group.newest), shown.replacingOccurrences(of: "\n", with: " ")])
                }
            }
            writer.write(CommandOutput.table(cells))
        }
        writer.flush()
        return 0
    }

    // MARK: - show

    static func show(_ arguments: [String], logger: Logger) async throws -> Int32 {
        let args = try CommandLineArguments(arguments, valued: ["where", "limit"])
        try args.only(["where", "limit"])
        guard args.positional.count == 1, let name = args.positional.first else {
            throw CommandLineArguments.UsageError(description: "usage: backbone dlq show TOPIC.dlq [--where ERROR] [--limit N]")
        }
        let limit = try args.int("limit")
        if let limit, limit < 0 { throw CommandLineArguments.UsageError(description: "--limit must be ≥ 0") }
        let settings = try KafkaSettings.resolve(logger: logger)
        let topic = deadLetterTopic(name)
        try await requireTopic(topic, settings: settings)
        let letters = try await read([topic], settings: settings, label: "reading dead letters").filter { $0.matches(args.value("where")) }
        let replayed = (try? await replayedKeys(topics: [topic], settings: settings, logger: logger)) ?? nil
        let writer = LineWriter()
        for letter in letters.prefix(limit ?? Int.max) {
            writer.write(line: Array(line(letter, replayed: replayed.map { $0.contains(ReplayKey(letter)) }).utf8))
        }
        writer.flush()
        return 0
    }

    /// A dead letter as a JSON line; the original value inlined when it is a JSON object or array.
    static func line(_ letter: Letter, replayed: Bool?) -> String {
        var text = "{\"dlq\":\(JSONString.quote(letter.dlq.topic)),\"partition\":\(letter.dlq.partition),\"offset\":\(letter.offset)"
        text += ",\"error\":\(JSONString.quote(letter.error))"
        if let record = letter.record {
            text += ",\"failedAt\":\"\(ContractCoding.formatTimestamp(record.failedAt))\",\"consumerGroup\":\(JSONString.quote(record.consumerGroup))"
            text += ",\"origin\":{\"topic\":\(JSONString.quote(record.originalTopic)),\"partition\":\(record.partition),\"offset\":\(record.offset)}"
            text += ",\"key\":\(record.key.map(JSONString.quote) ?? "null")" + (record.keyEncoding == "base64" ? ",\"keyEncoding\":\"base64\"" : "")
            if let value = letter.value, RecordLine.isInlinableJSON(value) {
                text += ",\"value\":" + String(decoding: value, as: UTF8.self)
            } else {
                text += ",\"value\":\(JSONString.quote(record.value))" + (record.valueEncoding == "base64" ? ",\"valueEncoding\":\"base64\"" : "")
            }
        }
        if let replayed { text += ",\"replayed\":\(replayed)" }
        return text + "}"
    }
}

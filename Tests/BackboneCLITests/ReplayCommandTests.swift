@testable import BackboneCLI
import BackboneTestSupport
import DevInfrastructure
import Foundation
import Kafka
import ServiceLogging
import Testing

/// `backbone topics|tail|dump|republish` as an operator runs them: the built executable as a
/// child process against an embedded Kafka cluster living in this test process.
@Suite("Topic replay commands", .serialized, .timeLimit(.minutes(3)), .enabled(if: Integration.isEnabled))
struct ReplayCommandTests {
    let cluster: EmbeddedKafkaCluster
    let producer: KafkaProducer

    init() throws {
        cluster = try EmbeddedKafkaCluster(brokers: 1)
        producer = try KafkaProducer(configuration: KafkaProducerConfiguration(bootstrapServers: cluster.bootstrapServers), logger: .disabled)
    }

    var environment: [String: String] { ["KAFKA_BROKERS": cluster.bootstrapServers] }

    func produce(_ topic: String, _ records: [(key: String?, value: [UInt8])]) async throws -> [KafkaDeliveryReport] {
        let results = await producer.send(records.map { KafkaProducerRecord(topic: topic, key: $0.key.map { Array($0.utf8) }, value: $0.value) })
        return try results.map { try $0.get() }
    }

    func decode(_ lines: [String]) throws -> [[String: Any]] {
        try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
    }

    @Test("topics lists every topic with its partitions and watermarks")
    func topics() async throws {
        try cluster.createTopic("cli.topics", partitions: 3)
        let reports = try await produce("cli.topics", (0..<7).map { ("user-\($0)", Array("{\"n\":\($0)}".utf8)) })
        let json = try await CLIProcess.run(["topics", "--json"], environment: environment)
        #expect(json.status == 0, "\(json.stderr)")
        let row = try #require(try decode(json.lines).first { $0["topic"] as? String == "cli.topics" })
        #expect(row["partitionCount"] as? Int == 3)
        let partitions = try #require(row["partitions"] as? [[String: Any]])
        for partition in 0..<3 {
            let entry = try #require(partitions.first { $0["partition"] as? Int == partition })
            #expect(entry["low"] as? Int == 0)
            #expect(entry["high"] as? Int == reports.filter { $0.partition == Int32(partition) }.count)
        }
        let table = try await CLIProcess.run(["topics"], environment: environment)
        #expect(table.status == 0)
        #expect(table.lines.first?.hasPrefix("TOPIC") == true)
        #expect(table.lines.contains { $0.hasPrefix("cli.topics") && $0.contains(" 3 ") })
    }

    @Test("tail --from beginning prints every record produced, with its key, value and offset, then stops")
    func tailFromBeginning() async throws {
        try cluster.createTopic("cli.tail", partitions: 2)
        let records = (0..<12).map { (key: "user-\($0 % 4)", value: Array("{\"event\":\($0),\"note\":\"é \\\"q\\\"\"}".utf8)) }
        let reports = try await produce("cli.tail", records)
        let outcome = try await CLIProcess.run(["tail", "cli.tail", "--from", "beginning"], environment: environment)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let lines = try decode(outcome.lines)
        #expect(lines.count == records.count)
        for (record, report) in zip(records, reports) {
            let line = try #require(lines.first { $0["partition"] as? Int == Int(report.partition) && $0["offset"] as? Int == Int(report.offset) })
            #expect(line["topic"] as? String == "cli.tail")
            #expect(line["key"] as? String == record.key)
            let value = try #require(line["value"] as? [String: Any])
            #expect(value["event"] as? Int == Int(String(decoding: record.value, as: UTF8.self).split(separator: ":")[1].split(separator: ",")[0]))
            #expect(value["note"] as? String == "é \"q\"")
            #expect(line["timestamp"] is String)
        }
    }

    @Test("tail --from OFFSET --key prints only that key's records from that offset on")
    func tailFromOffsetWithKey() async throws {
        try cluster.createTopic("cli.keys", partitions: 1)
        let records = (0..<10).map { (key: $0 % 2 == 0 ? "even" : "odd", value: Array("value \($0)".utf8)) }
        _ = try await produce("cli.keys", records)
        let outcome = try await CLIProcess.run(["tail", "cli.keys", "--from", "5", "--key", "even"], environment: environment)
        #expect(outcome.status == 0, "\(outcome.stderr)")
        let lines = try decode(outcome.lines)
        #expect(lines.map { $0["offset"] as? Int } == [6, 8])
        #expect(lines.map { $0["value"] as? String } == ["value 6", "value 8"])
        #expect(lines.allSatisfy { $0["key"] as? String == "even" })

        let limited = try await CLIProcess.run(["tail", "cli.keys", "--from", "beginning", "--limit", "3"], environment: environment)
        #expect(try decode(limited.lines).map { $0["offset"] as? Int } == [0, 1, 2])
    }

    @Test("dump then republish into another topic reproduces keys and values byte for byte")
    func dumpRepublishRoundTrip() async throws {
        try cluster.createTopic("cli.source", partitions: 2)
        try cluster.createTopic("cli.copy", partitions: 2)
        let originals: [(key: String?, value: [UInt8])] = [
            ("a", Array(#"{"spaced" :  [1, 2.50, "x"] ,"k":{}}"#.utf8)), ("b", Array("plain text".utf8)), (nil, Array("{\"no\":\"key\"}".utf8)),
            ("c", [0xFF, 0x00, 0x80, 0x7F]), ("a", Array("{\n \"multi\": \"line\"\n}".utf8)), ("d", []), ("b", Array("\"quoted\"".utf8)),
        ]
        _ = try await produce("cli.source", originals)
        let file = CLIProcess.emptyHome() + "/dump.jsonl"
        let dump = try await CLIProcess.run(["dump", "cli.source"], environment: environment)
        #expect(dump.status == 0, "\(dump.stderr)")
        #expect(dump.lines.count == originals.count)
        try dump.stdout.write(toFile: file, atomically: true, encoding: .utf8)

        let republish = try await CLIProcess.run(["republish", file, "--topic", "cli.copy"], environment: environment)
        #expect(republish.status == 0, "\(republish.stderr)")
        #expect(republish.stdout.contains("republished \(originals.count) records"))

        let copied = try await consumeAll("cli.copy", count: originals.count)
        let expected = originals.map { Pair(key: $0.key.map { Array($0.utf8) }, value: $0.value) }
        #expect(copied.map { Pair(key: $0.key, value: $0.value) }.sorted() == expected.sorted())
    }

    @Test("republish of a file with a malformed line names the line, exits 1 and produces nothing")
    func republishMalformed() async throws {
        try cluster.createTopic("cli.malformed", partitions: 1)
        let file = CLIProcess.emptyHome() + "/bad.jsonl"
        try """
        {"topic":"cli.malformed","key":"k","value":{"ok":1}}
        {"topic":"cli.malformed","key":"k","value":{"ok":2}}
        {"topic":"cli.malformed","key":"k","value": oops
        {"topic":"cli.malformed","key":"k","value":{"ok":4}}

        """.write(toFile: file, atomically: true, encoding: .utf8)
        let outcome = try await CLIProcess.run(["republish", file], environment: environment)
        #expect(outcome.status == 1)
        #expect(outcome.stderr.contains("line 3"))
        try await Task.sleep(for: .seconds(1))
        let admin = try KafkaAdmin(bootstrapServers: cluster.bootstrapServers, logger: .disabled)
        #expect(try await admin.watermarks(topic: "cli.malformed", partition: 0).high == 0)
    }

    @Test("usage mistakes exit 2 and a missing topic exits 1, both with a message")
    func errors() async throws {
        let usage = try await CLIProcess.run(["tail", "cli.x", "--from", "someday"], environment: environment)
        #expect(usage.status == 2)
        #expect(usage.stderr.contains("--from"))
        let missing = try await CLIProcess.run(["tail", "cli.does-not-exist"], environment: environment)
        #expect(missing.status == 1)
        #expect(missing.stderr.contains("cli.does-not-exist: topic does not exist"))
        let noBrokers = try await CLIProcess.run(["topics"], environment: [:])
        #expect(noBrokers.status == 2)
        #expect(noBrokers.stderr.contains("KAFKA_BROKERS"))
    }

    struct Pair: Comparable {
        var key: [UInt8]?
        var value: [UInt8]
        static func < (lhs: Pair, rhs: Pair) -> Bool {
            (lhs.key ?? []).lexicographicallyPrecedes(rhs.key ?? []) || ((lhs.key ?? []) == (rhs.key ?? []) && lhs.value.lexicographicallyPrecedes(rhs.value))
        }
    }

    func consumeAll(_ topic: String, count: Int) async throws -> [KafkaConsumerRecord] {
        try await TopicReader.read(topic, bootstrapServers: cluster.bootstrapServers, count: count)
    }
}

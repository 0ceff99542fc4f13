import CRdKafka
import DevInfrastructure
import Foundation
import Kafka
import Lifecycle
import ServiceLogging
import Synchronization

/// Produce throughput: raw librdkafka (producev + poll) vs `KafkaProducer.send(_: [Record])`,
/// same cluster, same records, same producer settings, in one run.
///
///     swift run -c release kafka-bench [records] [rounds]
@main
struct KafkaBench {
    static func main() async throws {
        let arguments = CommandLine.arguments.dropFirst().compactMap { Int($0) }
        let count = arguments.first ?? 200_000
        let rounds = arguments.dropFirst().first ?? 5
        let only = CommandLine.arguments.dropFirst().first { Int($0) == nil }  // "raw" or "wrapper": profile one side
        let cluster = try EmbeddedKafkaCluster(brokers: 1)
        defer { cluster.shutdown() }
        let value = [UInt8](repeating: 0x61, count: 200)
        let keys = (0..<64).map { Array(String(format: "key-%012d", $0).utf8) }
        print("kafka-bench: \(count) records of \(value.count) bytes, idempotent, acks=all, linger.ms=5, 4 partitions, "
              + "embedded mock cluster at \(cluster.bootstrapServers), best of \(rounds) rounds")

        var rawBest = 0.0
        var wrapperBest = 0.0
        var ratios: [Double] = []
        for round in 1...rounds {
            let rawTopic = "bench-raw-\(round)"
            let wrapperTopic = "bench-wrapper-\(round)"
            try cluster.createTopic(rawTopic, partitions: 4)
            try cluster.createTopic(wrapperTopic, partitions: 4)

            let raw = only == "wrapper" ? 1 : try RawProducer.run(bootstrap: cluster.bootstrapServers, topic: rawTopic, count: count, keys: keys, value: value)
            let records = (0..<count).map { KafkaProducerRecord(topic: wrapperTopic, key: keys[$0 % keys.count], value: value) }
            let wrapper = only == "raw" ? 1 : try await wrapperRun(bootstrap: cluster.bootstrapServers, records: records)
            print(String(format: "round %d: raw librdkafka %10.0f records/s   KafkaProducer %10.0f records/s   ratio %.2f",
                         round, raw, wrapper, wrapper / raw))
            ratios.append(wrapper / raw)
            rawBest = max(rawBest, raw)
            wrapperBest = max(wrapperBest, wrapper)
        }
        print(String(format: "best:    raw librdkafka %10.0f records/s   KafkaProducer %10.0f records/s   ratio %.2f (target >= 0.80)",
                     rawBest, wrapperBest, wrapperBest / rawBest))
        print(String(format: "median of per-round ratios: %.2f", ratios.sorted()[ratios.count / 2]))
    }

    static func wrapperRun(bootstrap: String, records: [KafkaProducerRecord]) async throws -> Double {
        let producer = try KafkaProducer(configuration: .init(bootstrapServers: bootstrap), logger: .disabled)
        // Warm-up (connection, producer id, metadata), not measured; the raw run does the same.
        _ = try await producer.send(records[0])
        let started = ContinuousClock.now
        let results = await producer.send(records)
        let elapsed = ContinuousClock.now - started
        await producer.shutdown()
        let failed = results.filter { if case .failure = $0 { true } else { false } }.count
        guard failed == 0 else { throw BenchError("wrapper: \(failed) records failed") }
        return Double(records.count) / elapsed.timeInterval
    }
}

/// The baseline: librdkafka driven directly, the way its own examples do it.
enum RawProducer {
    static func run(bootstrap: String, topic: String, count: Int, keys: [[UInt8]], value: [UInt8]) throws -> Double {
        let conf = rd_kafka_conf_new()
        var errstr = [CChar](repeating: 0, count: 512)
        for (key, val) in [("bootstrap.servers", bootstrap), ("enable.idempotence", "true"), ("acks", "all"),
                           ("linger.ms", "5"), ("message.timeout.ms", "30000")] {
            guard rd_kafka_conf_set(conf, key, val, &errstr, errstr.count) == RD_KAFKA_CONF_OK else {
                throw BenchError("raw config \(key)")
            }
        }
        let counters = Counters()
        rd_kafka_conf_set_opaque(conf, Unmanaged.passUnretained(counters).toOpaque())
        rd_kafka_conf_set_dr_msg_cb(conf, rawDeliveryCallback)
        guard let rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &errstr, errstr.count) else { throw BenchError("raw rd_kafka_new") }
        defer { rd_kafka_destroy(rk) }

        // Warm-up (connection, producer id, metadata), not measured; the wrapper run does the same.
        topic.withCString { topicName in
            _ = crdkafka_produce(rk, topicName, -1, nil, 0, value.withUnsafeBytes { $0.baseAddress }, value.count, nil, nil)
        }
        while rd_kafka_flush(rk, 1_000) == RD_KAFKA_RESP_ERR__TIMED_OUT {}
        counters.value.withLock { $0 = (0, 0) }

        let started = ContinuousClock.now
        topic.withCString { topicName in
            value.withUnsafeBytes { payload in
                for index in 0..<count {
                    keys[index % keys.count].withUnsafeBytes { key in
                        while crdkafka_produce(rk, topicName, -1, key.baseAddress, key.count, payload.baseAddress, payload.count,
                                               nil, nil) == RD_KAFKA_RESP_ERR__QUEUE_FULL {
                            rd_kafka_poll(rk, 100)
                        }
                    }
                    rd_kafka_poll(rk, 0)
                }
            }
        }
        while rd_kafka_flush(rk, 1_000) == RD_KAFKA_RESP_ERR__TIMED_OUT {}
        let elapsed = ContinuousClock.now - started
        let (delivered, failed) = counters.value.withLock { $0 }
        guard delivered == count, failed == 0 else { throw BenchError("raw: \(delivered) delivered, \(failed) failed") }
        return Double(count) / elapsed.timeInterval
    }
}

final class Counters: Sendable {
    let value = Mutex((delivered: 0, failed: 0))
}

private func rawDeliveryCallback(_ rk: OpaquePointer?, _ message: UnsafePointer<rd_kafka_message_t>?, _ opaque: UnsafeMutableRawPointer?) {
    guard let message, let opaque else { return }
    let counters = Unmanaged<Counters>.fromOpaque(opaque).takeUnretainedValue()
    let ok = message.pointee.err == RD_KAFKA_RESP_ERR_NO_ERROR
    counters.value.withLock { ok ? ($0.delivered += 1) : ($0.failed += 1) }
}

struct BenchError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

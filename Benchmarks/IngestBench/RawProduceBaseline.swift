import CRdKafka
import Foundation
import Lifecycle

/// The floor: a plain librdkafka produce loop (idempotent, `acks=all`, same linger as the
/// service's producer) of pre-serialized records, flushed at the end. Runs on the calling
/// thread (the benchmark calls it from a dedicated thread).
enum RawProduceBaseline {
    struct Failure: Error, CustomStringConvertible { let description: String }

    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Produces every (key, value) to `topic`; returns the elapsed seconds until all were acknowledged.
    static func run(bootstrapServers: String, topic: String, records: [(key: [UInt8], value: [UInt8])]) throws -> Double {
        let conf = rd_kafka_conf_new()
        var errstr = [CChar](repeating: 0, count: 512)
        for (name, value) in [("bootstrap.servers", bootstrapServers), ("enable.idempotence", "true"), ("acks", "all"),
                              ("linger.ms", "5"), ("client.id", "ingest-bench-raw")] {
            guard rd_kafka_conf_set(conf, name, value, &errstr, errstr.count) == RD_KAFKA_CONF_OK else {
                rd_kafka_conf_destroy(conf)
                throw Failure(description: "rd_kafka_conf_set \(name): \(text(errstr))")
            }
        }
        guard let producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, &errstr, errstr.count) else {
            throw Failure(description: "rd_kafka_new: \(text(errstr))")
        }
        defer { rd_kafka_destroy(producer) }
        // Connect and learn the partitions first: the floor is the steady produce rate.
        if let first = records.first {
            _ = first.value.withUnsafeBytes { value in
                crdkafka_produce(producer, topic, -1, nil, 0, value.baseAddress, value.count, nil, nil)
            }
            _ = rd_kafka_flush(producer, 10_000)
        }
        let start = ContinuousClock.now
        for (index, record) in records.enumerated() {
            while true {
                let err = record.value.withUnsafeBytes { value in
                    record.key.withUnsafeBytes { key in
                        crdkafka_produce(producer, topic, -1, key.baseAddress, key.count, value.baseAddress, value.count, nil, nil)
                    }
                }
                if err == RD_KAFKA_RESP_ERR_NO_ERROR { break }
                guard err == RD_KAFKA_RESP_ERR__QUEUE_FULL else {
                    throw Failure(description: "produce: \(String(cString: rd_kafka_err2str(err)))")
                }
                rd_kafka_poll(producer, 10)
            }
            if index % 1000 == 0 { rd_kafka_poll(producer, 0) }
        }
        let flushed = rd_kafka_flush(producer, 60_000)
        let elapsed = ContinuousClock.now - start
        guard flushed == RD_KAFKA_RESP_ERR_NO_ERROR, rd_kafka_outq_len(producer) == 0 else {
            throw Failure(description: "flush: \(String(cString: rd_kafka_err2str(flushed)))")
        }
        return elapsed.timeInterval
    }
}

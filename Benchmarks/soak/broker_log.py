"""What the embedded broker of a running `backbone dev` holds: per topic, the records it keeps
(high minus low watermark of each partition: the mock drops a partition's oldest records beyond
5 MiB) and their bytes, estimated from the last records of each partition (key, value, headers
and librdkafka's per-record framing). The figure to set beside the growth of the process that
runs the broker. Usage: broker_log.py DEV_ENV_FILE
"""
import sys

from confluent_kafka import Consumer, TopicPartition

SAMPLE = 200
FRAMING = 70  # a record's framing in a v2 batch, and the batch header shared among its records


def settings(path):
    """The KEY='value' lines of a dev.env."""
    values = {}
    for line in open(path):
        if "=" in line and not line.startswith("#"):
            key, value = line.strip().split("=", 1)
            values[key] = value.strip("'")
    return values


def main():
    brokers = settings(sys.argv[1])["KAFKA_BROKERS"]
    consumer = Consumer({"bootstrap.servers": brokers, "group.id": "soak-broker-log", "enable.auto.commit": False})
    topics = consumer.list_topics(timeout=10).topics
    total_records, total_bytes = 0, 0
    print(f"{'topic':36s} {'partitions':>10s} {'records kept':>13s} {'MiB kept':>9s}")
    for name in sorted(topics):
        records, size = 0, 0
        for partition in topics[name].partitions:
            low, high = consumer.get_watermark_offsets(TopicPartition(name, partition), timeout=10)
            if high <= low:
                continue
            start = max(low, high - SAMPLE)
            consumer.assign([TopicPartition(name, partition, start)])
            sampled, sampled_bytes = 0, 0
            while sampled < high - start:
                message = consumer.poll(5)
                if message is None:
                    break
                if message.error():
                    continue
                headers = sum(len(k) + len(v or b"") for k, v in (message.headers() or []))
                sampled += 1
                sampled_bytes += len(message.key() or b"") + len(message.value() or b"") + headers + FRAMING
            records += high - low
            size += (sampled_bytes / sampled) * (high - low) if sampled else 0
        if records:
            print(f"{name:36s} {len(topics[name].partitions):10d} {records:13d} {size / 1048576:9.1f}")
        total_records += records
        total_bytes += size
    print(f"{'total':36s} {'':10s} {total_records:13d} {total_bytes / 1048576:9.1f}")
    consumer.close()


if __name__ == "__main__":
    main()

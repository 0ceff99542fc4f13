#ifndef CRdKafka_SHIM_H
#define CRdKafka_SHIM_H
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/// Produces one message (copied by librdkafka) to `topic`, with the partition chosen by the
/// partitioner unless `partition` is >= 0. `headers` may be NULL; on success librdkafka owns
/// them, on failure the caller still does. `opaque` is handed back in the delivery report.
/// Wraps the variadic rd_kafka_producev(), which Swift cannot call.
static inline rd_kafka_resp_err_t crdkafka_produce(rd_kafka_t *rk, const char *topic, int32_t partition,
                                                   const void *key, size_t key_len,
                                                   const void *value, size_t value_len,
                                                   rd_kafka_headers_t *headers, void *opaque) {
    if (partition < 0) partition = RD_KAFKA_PARTITION_UA;
    if (headers != NULL) {
        return rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                 RD_KAFKA_V_KEY((void *)key, key_len),
                                 RD_KAFKA_V_VALUE((void *)value, value_len),
                                 RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
    }
    return rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_PARTITION(partition),
                             RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                             RD_KAFKA_V_KEY((void *)key, key_len),
                             RD_KAFKA_V_VALUE((void *)value, value_len),
                             RD_KAFKA_V_OPAQUE(opaque), RD_KAFKA_V_END);
}

/// The logical offset "earliest" (RD_KAFKA_OFFSET_BEGINNING is a macro Swift cannot import).
static inline int64_t crdkafka_offset_beginning(void) { return RD_KAFKA_OFFSET_BEGINNING; }
/// The logical offset "latest".
static inline int64_t crdkafka_offset_end(void) { return RD_KAFKA_OFFSET_END; }
/// The logical offset "use the committed offset".
static inline int64_t crdkafka_offset_stored(void) { return RD_KAFKA_OFFSET_STORED; }
/// Purge flags for rd_kafka_purge(): queued and in-flight messages.
static inline int crdkafka_purge_all_flags(void) { return RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT; }

#endif

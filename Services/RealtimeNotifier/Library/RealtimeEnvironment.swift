import Kafka
import PrometheusMetrics
import ServiceLogging

/// What every socket session shares.
struct RealtimeEnvironment: Sendable {
    let configuration: RealtimeConfiguration
    let authorizer: ChannelAuthorizer
    let hub: SubscriptionHub
    let producer: any KafkaRecordSender
    let metrics: MetricsRegistry
    let logger: Logger
}

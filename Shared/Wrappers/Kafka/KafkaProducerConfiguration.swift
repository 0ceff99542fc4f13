import Lifecycle
import ServiceLogging

/// Configuration of a `KafkaProducer`. Idempotent with `acks=all` by default.
public struct KafkaProducerConfiguration: Sendable {
    /// Comma-separated `host:port` list.
    public var bootstrapServers: String
    public var clientID: String
    /// How long a record may wait for acknowledgement before `send` fails with
    /// `.messageTimedOut` (`delivery.timeout.ms`, a.k.a. `message.timeout.ms`).
    public var deliveryTimeout: Duration
    /// How long to wait for more records before sending a batch (`linger.ms`).
    public var lingerMilliseconds: Int
    /// `enable.idempotence` (and with it `acks=all`).
    public var idempotent: Bool
    /// Raw librdkafka properties, applied last (they override the fields above).
    public var extra: [String: String]

    public init(bootstrapServers: String, clientID: String = "zhixi-backbone", deliveryTimeout: Duration = .seconds(30),
                lingerMilliseconds: Int = 5, idempotent: Bool = true, extra: [String: String] = [:]) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
        self.deliveryTimeout = deliveryTimeout
        self.lingerMilliseconds = lingerMilliseconds
        self.idempotent = idempotent
        self.extra = extra
    }

    var properties: [(String, String)] {
        var list: [(String, String)] = [
            ("bootstrap.servers", bootstrapServers),
            ("client.id", clientID),
            ("message.timeout.ms", String(deliveryTimeout.wholeMilliseconds)),
            ("linger.ms", String(lingerMilliseconds)),
        ]
        if idempotent {
            list.append(("enable.idempotence", "true"))
            list.append(("acks", "all"))
        }
        return list + extra.sorted { $0.key < $1.key }
    }
}

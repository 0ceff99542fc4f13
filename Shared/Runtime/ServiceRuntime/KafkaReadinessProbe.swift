import Kafka
import ServiceLogging

/// `/readyz`'s Kafka check: a metadata request on an admin client of its own, opened off the
/// cooperative pool (a request must not wait on librdkafka's constructor, which takes a second
/// while the broker is down) and replaced after a failed check, so readiness says whether the
/// brokers can be reached, not whether one old connection recovered (`ReplaceableKafkaAdmin`).
public final class KafkaReadinessProbe: Sendable {
    let admin: ReplaceableKafkaAdmin

    public init(bootstrapServers: String, clientID: String) {
        admin = ReplaceableKafkaAdmin(bootstrapServers: bootstrapServers, clientID: clientID, timeout: .seconds(3), logger: .disabled)
    }

    public func check() async -> Bool {
        guard let client = try? await admin.admin() else { return false }
        if (try? await client.listTopics()) != nil { return true }
        admin.replace(client)
        return false
    }
}

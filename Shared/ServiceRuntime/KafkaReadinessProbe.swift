import Kafka
import Logging
import Synchronization

/// `/readyz`'s Kafka check: a metadata request on a client of its own. A client that lived
/// through a broker outage can keep timing out after the brokers are back (seen in the fault
/// suite with librdkafka's mock cluster: its requests go unanswered on a connection it
/// believes up), so after a failed check the next one asks on a new client; readiness then
/// says whether the brokers can be reached, not whether one old connection recovered.
public final class KafkaReadinessProbe: Sendable {
    let bootstrapServers: String
    let clientID: String
    let admin = Mutex<KafkaAdmin?>(nil)

    public init(bootstrapServers: String, clientID: String) {
        self.bootstrapServers = bootstrapServers
        self.clientID = clientID
    }

    public func check() async -> Bool {
        let client: KafkaAdmin
        do {
            client = try admin.withLock { admin in
                if let admin { return admin }
                let made = try KafkaAdmin(bootstrapServers: bootstrapServers, clientID: clientID, timeout: .seconds(3), logger: .disabled)
                admin = made
                return made
            }
        } catch {
            return false
        }
        if (try? await client.listTopics()) != nil { return true }
        // Replaced for the next check; the old handle is destroyed off this request's path.
        let old = admin.withLock { admin -> KafkaAdmin? in
            guard admin === client else { return nil }
            defer { admin = nil }
            return admin
        }
        if let old { Task.detached { withExtendedLifetime(old) {} } }
        return false
    }
}

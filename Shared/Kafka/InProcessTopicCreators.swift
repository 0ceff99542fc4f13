import Synchronization

/// A Kafka cluster running inside this process that creates topics itself, because its
/// brokers do not serve the Admin API's CreateTopics (the embedded development broker).
package protocol InProcessTopicCreator: AnyObject, Sendable {
    func createTopic(_ name: String, partitions: Int32, replicationFactor: Int32?) throws(KafkaError)
}

/// The in-process clusters by bootstrap servers, so `KafkaAdmin.createTopic` can reach them
/// without the production modules linking the development infrastructure.
package enum InProcessTopicCreators {
    private struct WeakCreator {
        weak var creator: (any InProcessTopicCreator)?
    }

    private static let registry = Mutex<[String: WeakCreator]>([:])

    package static func register(_ creator: any InProcessTopicCreator, bootstrapServers: String) {
        registry.withLock { $0[bootstrapServers] = WeakCreator(creator: creator) }
    }

    /// Forgets `creator` (only if it is still the one registered for these servers).
    package static func unregister(_ creator: any InProcessTopicCreator, bootstrapServers: String) {
        registry.withLock { registry in
            if registry[bootstrapServers]?.creator === creator || registry[bootstrapServers]?.creator == nil {
                registry[bootstrapServers] = nil
            }
        }
    }

    static func creator(bootstrapServers: String) -> (any InProcessTopicCreator)? {
        registry.withLock { $0[bootstrapServers]?.creator }
    }
}

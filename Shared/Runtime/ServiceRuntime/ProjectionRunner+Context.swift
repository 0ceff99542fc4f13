import Projection

extension ProjectionRunner {
    /// A service's projection, over its context's clients: the context's consumer settings
    /// (`kafkaConsumerProperties`, under `configuration`'s own), the identity its positions are
    /// bound to, and its consumer-group observer.
    public convenience init(projection: P, configuration: ProjectionRunnerConfiguration, context: ServiceContext) {
        var configuration = configuration
        configuration.consumerProperties = context.configuration.kafkaConsumerProperties.merging(configuration.consumerProperties) { $1 }
        configuration.clusterIdentity = context.configuration.kafkaClusterIdentity
        configuration.groupObserver = context.consumerGroupObserver
        self.init(projection: projection, configuration: configuration, database: context.database, deadLetters: context.producer,
                  metrics: context.metrics, logger: context.logger)
    }
}

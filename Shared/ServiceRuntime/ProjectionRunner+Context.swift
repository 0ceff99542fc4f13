import Projection

extension ProjectionRunner {
    /// A service's projection, over its context's clients: the context's consumer settings
    /// (`kafkaConsumerProperties`, under `configuration`'s own) and its running groups.
    public convenience init(projection: P, configuration: ProjectionRunnerConfiguration, context: ServiceContext) {
        var configuration = configuration
        configuration.consumerProperties = context.configuration.kafkaConsumerProperties.merging(configuration.consumerProperties) { $1 }
        configuration.runningGroups = context.runningGroups
        self.init(projection: projection, configuration: configuration, database: context.database, deadLetters: context.producer,
                  metrics: context.metrics, logger: context.logger)
    }
}

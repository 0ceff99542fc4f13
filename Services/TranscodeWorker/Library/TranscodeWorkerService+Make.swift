import ObjectStore
import ServiceRuntime
import Settings

extension TranscodeWorkerService {
    /// The worker as the executable and `backbone dev` run it: its settings and the `S3_*`
    /// store from the environment, the RoomScan converter. The caller validates `env`.
    public static func make(context: ServiceContext, env: inout EnvironmentReader) -> TranscodeWorkerService {
        let configuration = TranscodeConfiguration.read(from: &env)
        let store = S3ObjectStore(configuration: S3Configuration.read(from: &env))
        var service = TranscodeWorkerService(
            context: context, configuration: configuration,
            pipeline: StoreTranscodePipeline(store: store, converter: RoomScanConverter(),
                                             workDirectory: configuration.workDirectory, maxJobBytes: configuration.maxJobBytes),
            links: StoreOutputLinks(store: store, ttl: configuration.linkTTL))
        service.objects = store
        return service
    }
}

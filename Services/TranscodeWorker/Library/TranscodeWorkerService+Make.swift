import ServiceRuntime

extension TranscodeWorkerService {
    /// The worker as the executable and `backbone dev` run it: settings from the environment.
    public static func make(context: ServiceContext, env: inout EnvironmentReader) throws -> TranscodeWorkerService {
        fatalError("wired once the object store lands")
    }
}

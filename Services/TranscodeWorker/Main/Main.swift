import Foundation
import ServiceRuntime
import TranscodeWorker

@main
struct TranscodeWorkerMain {
    static func main() async {
        exit(await ServiceHost.main(name: "transcode-worker", defaultPort: 8083,
                                    migrations: TranscodeWorkerService.migrations) { context, env in
            TranscodeWorkerService.make(context: context, env: &env).parts()
        })
    }
}

import Foundation
import Projection
import RealtimeNotifier
import ServiceRuntime

@main
struct RealtimeNotifierMain {
    static func main() async {
        exit(await ServiceHost.main(name: "realtime-notifier", defaultPort: 8084,
                                    migrations: ProjectionSchema.migrations + RealtimeSchema.migrations) { context, env in
            RealtimeNotifierService(context: context, configuration: .read(from: &env)).parts()
        })
    }
}

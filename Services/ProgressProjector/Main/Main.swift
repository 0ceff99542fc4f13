import Foundation
import ProgressProjector
import ServiceRuntime

@main
struct ProgressProjectorMain {
    static func main() async {
        exit(await ServiceHost.main(name: "progress-projector", defaultPort: 8081,
                                    migrations: ProgressProjectorService.migrations) { context, env in
            ProgressProjectorService(context: context, configuration: .read(from: &env)).parts()
        })
    }
}

import Foundation
import Ingest
import ServiceRuntime

@main
struct IngestMain {
    static func main() async {
        exit(await ServiceHost.main(name: "ingest", defaultPort: 8080, migrations: IngestService.migrations) { context, env in
            IngestService(context: context, configuration: .read(from: &env), objects: IngestService.objectStore(from: &env)).parts()
        })
    }
}

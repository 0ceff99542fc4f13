import AnalyticsAggregator
import Foundation
import Projection
import ServiceRuntime

@main
struct AnalyticsAggregatorMain {
    static func main() async {
        exit(await ServiceHost.main(name: "analytics-aggregator", defaultPort: 8082,
                                    migrations: ProjectionSchema.migrations + AnalyticsSchema.migrations) { context, environment in
            AnalyticsService(context: context, configuration: .read(from: &environment)).parts()
        })
    }
}

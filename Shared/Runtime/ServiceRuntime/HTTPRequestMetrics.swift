import HTTPRouting
import PrometheusMetrics
import Synchronization

/// The request count and latency series of an HTTP service, by route pattern, method and
/// status. Their keys are built once per label set and kept: the labels name the pattern, not
/// the path, so the set is as small as the route table times the methods and statuses answered.
final class HTTPRequestMetrics: Sendable {
    private struct Labels: Hashable, Sendable {
        let route: String
        let method: HTTPMethod
        let status: Int
    }

    private struct SeriesPair: Sendable {
        let requests: MetricsRegistry.Series
        let duration: MetricsRegistry.Series
    }

    /// A bound on the kept pairs (a status a handler invents should not grow it without end).
    static let capacity = 4096

    private let metrics: MetricsRegistry
    private let service: String
    private let kept = Mutex<[Labels: SeriesPair]>([:])

    init(metrics: MetricsRegistry, service: String) {
        self.metrics = metrics
        self.service = service
        metrics.describe("http_requests_total", type: "counter", help: "HTTP requests answered, by route pattern, method and status.")
        metrics.describe("http_request_duration_seconds", type: "histogram",
                         help: "Time from a complete request to its response, by service and route pattern.")
    }

    /// Counts one answered request and its latency.
    func record(route: String, method: HTTPMethod, status: Int, seconds: Double) {
        let labels = Labels(route: route, method: method, status: status)
        let pair = kept.withLock { $0[labels] } ?? makeSeries(labels)
        metrics.increment(pair.requests)
        metrics.observe(pair.duration, seconds)
    }

    private func makeSeries(_ labels: Labels) -> SeriesPair {
        let pair = SeriesPair(
            requests: .init("http_requests_total", labels: ["service": service, "route": labels.route,
                                                            "method": labels.method.rawValue, "status": String(labels.status)]),
            duration: .init("http_request_duration_seconds", labels: ["service": service, "route": labels.route]))
        kept.withLock { if $0.count < Self.capacity { $0[labels] = pair } }
        return pair
    }
}

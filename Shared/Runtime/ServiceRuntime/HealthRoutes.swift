import Foundation
import HTTPRouting
import PrometheusMetrics

/// A named dependency check for `/readyz` (Kafka metadata, `SELECT 1`, …).
public struct ReadinessCheck: Sendable {
    public let name: String
    public let check: @Sendable () async -> Bool

    public init(name: String, check: @escaping @Sendable () async -> Bool) {
        self.name = name
        self.check = check
    }
}

/// `/healthz` (alive), `/readyz` (every dependency reachable; otherwise 503 with
/// `Retry-After`, as every 503 of the project) and `/metrics` (Prometheus).
public enum HealthRoutes {
    struct Readiness: Encodable {
        let status: String
        let checks: [String: Bool]
    }

    /// `Retry-After` of a not-ready answer: a dependency outage is usually over in seconds.
    public static let notReadyRetryAfterSeconds = 2

    /// - Parameter collect: runs before each `/metrics` answer, to set the gauges measured at
    ///   scrape time (`SystemBacklog`); the readiness checks run then too (`service_ready`).
    public static func router(service: String, checks: [ReadinessCheck], metrics: MetricsRegistry,
                              collect: @escaping @Sendable () async -> Void = {}) -> Router {
        metrics.describe("service_ready", type: "gauge", help: "1 when every readiness check of the service passes (what /readyz answers), else 0.")
        metrics.describe("service_readiness_check", type: "gauge",
                         help: "1 when the readiness check passes (postgres, kafka, a consumer of the service holding its partitions), else 0.")
        var router = Router()
        // The same answer every time: encoded once, not per request.
        let alive = HTTPResponse.json(["status": "ok", "service": service])
        router.get("/healthz") { _ in alive }
        router.get("/readyz") { _ in
            let results = await evaluate(checks)
            let ready = results.values.allSatisfy { $0 }
            return .json(Readiness(status: ready ? "ready" : "not_ready", checks: results),
                         status: ready ? .ok : .serviceUnavailable,
                         headers: ready ? [:] : ["Retry-After": String(notReadyRetryAfterSeconds)])
        }
        router.get("/metrics") { _ in
            await collect()
            let results = await evaluate(checks)
            for (check, passed) in results {
                metrics.set("service_readiness_check", passed ? 1 : 0, labels: ["service": service, "check": check])
            }
            metrics.set("service_ready", results.values.allSatisfy { $0 } ? 1 : 0, labels: ["service": service])
            return .text(metrics.render(), contentType: "text/plain; version=0.0.4; charset=utf-8")
        }
        return router
    }

    /// Every check's result, run at once.
    static func evaluate(_ checks: [ReadinessCheck]) async -> [String: Bool] {
        var results: [String: Bool] = [:]
        await withTaskGroup(of: (String, Bool).self) { group in
            for check in checks { group.addTask { (check.name, await check.check()) } }
            for await (name, ok) in group { results[name] = ok }
        }
        return results
    }
}

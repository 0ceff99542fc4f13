import Dispatch
import Foundation
import Lifecycle
import Synchronization

/// Drives pre-built requests over keep-alive connections, one blocking thread each.
public enum Load {
    public struct Result: Sendable {
        public var acceptedEvents: Int
        public var failures: Int
        public var seconds: Double
        /// Milliseconds, sorted.
        public var latencies: [Double]

        public func percentile(_ p: Double) -> Double {
            guard !latencies.isEmpty else { return .nan }
            return latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)]
        }
    }

    private struct Totals {
        var accepted = 0
        var failures = 0
        var latencies: [Double] = []
    }

    /// Runs `body` on a dedicated thread (blocking work stays off the cooperative pool).
    public static func onThread<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Swift.Result { try body() }) }.start()
        }
    }

    /// Posts every request; `batchesPerSecond` paces the whole run (open loop), `nil` saturates.
    public static func run(port: Int, requests: [[UInt8]], connections: Int, batchesPerSecond: Double?) async throws -> Result {
        try await run(port: port, count: requests.count, connections: connections, batchesPerSecond: batchesPerSecond) { requests[$0] }
    }

    /// Posts `count` requests, the `index`th built by `request(index)` just before it is sent.
    public static func run(port: Int, count: Int, connections: Int, batchesPerSecond: Double?,
                           request: @escaping @Sendable (Int) -> [UInt8]) async throws -> Result {
        let totals = Mutex(Totals())
        let group = DispatchGroup()
        let start = ContinuousClock.now
        for connection in 0..<connections {
            group.enter()
            Thread {
                defer { group.leave() }
                var local = Totals()
                do {
                    let client = try LoadClient(port: port)
                    for index in stride(from: connection, to: count, by: connections) {
                        var begin = ContinuousClock.now
                        if let rate = batchesPerSecond {
                            let scheduled = start + .seconds(Double(index) / rate)
                            if scheduled > begin { Thread.sleep(forTimeInterval: seconds(scheduled - begin)) }
                            begin = scheduled
                        }
                        let (status, body) = try client.exchange(request(index))
                        local.latencies.append(seconds(ContinuousClock.now - begin) * 1000)
                        if status == 200, let count = acceptedCount(body) { local.accepted += count } else { local.failures += 1 }
                    }
                } catch {
                    local.failures += 1
                    FileHandle.standardError.write(Data("load connection \(connection): \(error)\n".utf8))
                }
                let finished = local
                totals.withLock {
                    $0.accepted += finished.accepted
                    $0.failures += finished.failures
                    $0.latencies += finished.latencies
                }
            }.start()
        }
        await withCheckedContinuation { continuation in group.notify(queue: .global()) { continuation.resume() } }
        let elapsed = seconds(ContinuousClock.now - start)
        return totals.withLock { Result(acceptedEvents: $0.accepted, failures: $0.failures, seconds: elapsed, latencies: $0.latencies.sorted()) }
    }

    /// `"accepted":N` of a batch response (sorted keys put it first).
    public static func acceptedCount(_ body: [UInt8]) -> Int? {
        let text = String(decoding: body.prefix(64), as: UTF8.self)
        guard let range = text.range(of: "\"accepted\":") else { return nil }
        return Int(text[range.upperBound...].prefix { $0.isNumber })
    }

    public static func seconds(_ d: Duration) -> Double { d.timeInterval }
}

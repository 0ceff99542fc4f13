import ServiceLogging

/// Work done every `interval` until cancelled — the one loop behind the relays, sweeps and
/// schedulers: runs `body`, logs a failure as a warning (`failure`, with the error; the next
/// round retries), then sleeps `interval` plus a random part of `jitter` (so replicas started
/// together do not all query at the same instant). Cancellation ends it at once, also
/// mid-sleep.
public struct PeriodicTask: Service {
    public let name: String
    let interval: Duration
    let jitter: Duration
    let failure: String
    let logger: Logger
    let body: @Sendable () async throws -> Void

    public init(name: String, every interval: Duration, jitter: Duration = .zero, failure: String, logger: Logger,
                _ body: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.interval = interval
        self.jitter = jitter
        self.failure = failure
        self.logger = logger
        self.body = body
    }

    public func run() async throws {
        while !Task.isCancelled {
            do {
                try await body()
            } catch is CancellationError {
                return
            } catch {
                logger.warning("\(failure)", metadata: ["task": name, "error": "\(error)"])
            }
            do { try await Task.sleep(for: nextPause()) } catch { return }
        }
    }

    func nextPause() -> Duration {
        guard jitter > .zero else { return interval }
        return interval + jitter * Double.random(in: 0..<1)
    }
}

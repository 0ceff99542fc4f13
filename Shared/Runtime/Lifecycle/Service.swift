import Dispatch
import Foundation
import ServiceLogging
import Synchronization

/// A long-running part of a process: an HTTP server, a consumer loop, a broker.
///
/// `run()` returns when the work is done or the task is cancelled; cancellation is the
/// shutdown signal, and a service finishes its in-flight work before returning.
public protocol Service: Sendable {
    var name: String { get }
    func run() async throws
}

/// A service made from a closure (for small loops and tests).
public struct ClosureService: Service {
    public let name: String
    private let body: @Sendable () async throws -> Void

    public init(name: String, _ body: @escaping @Sendable () async throws -> Void) {
        self.name = name
        self.body = body
    }

    public func run() async throws { try await body() }
}

/// Runs services together: starts them in order, and on SIGTERM/SIGINT (or when one of
/// them ends or fails, or the surrounding task is cancelled) shuts them down in reverse
/// order, each one finishing before the one started before it is asked to stop.
///
/// Stopping a service has two phases. A service that handles the graceful phase
/// (`withGracefulShutdownHandler`) is first asked to finish — the batch in hand, its outbox —
/// and given `gracefulTimeout` to return; then (or at once, for a service that does not) its
/// task is cancelled.
public struct ServiceGroup: Sendable {
    public let services: [any Service]
    public let logger: Logger
    public let handlesSignals: Bool
    /// The signals that stop the group when `handlesSignals` (SIGTERM and SIGINT by default).
    public let signals: [Int32]
    /// The bound on the whole shutdown: a service still running when it passes is left
    /// behind (logged), so that SIGTERM always ends the process in bounded time, even when a
    /// dependency is unreachable and a service waits on it.
    public let shutdownTimeout: Duration
    /// How long one service may take to finish by itself after the graceful phase began,
    /// before its task is cancelled (within `shutdownTimeout` for the whole shutdown).
    public let gracefulTimeout: Duration

    public init(services: [any Service], handlesSignals: Bool = true, signals: [Int32] = [SIGTERM, SIGINT],
                shutdownTimeout: Duration = .seconds(10), gracefulTimeout: Duration = .seconds(5), logger: Logger) {
        self.services = services
        self.logger = logger
        self.handlesSignals = handlesSignals
        self.signals = signals
        self.shutdownTimeout = shutdownTimeout
        self.gracefulTimeout = gracefulTimeout
    }

    private enum Event: Sendable {
        case finished(index: Int, error: (any Error)?)
        case signal(Int32)
    }

    public func run() async throws {
        let (events, continuation) = AsyncStream<Event>.makeStream(bufferingPolicy: .unbounded)
        let signalSources = handlesSignals ? Self.installSignalHandlers(signals) { continuation.yield(.signal($0)) } : []
        defer { signalSources.forEach { $0.cancel() } }

        // One task per service, each with its own cancellation handle, so that shutdown can
        // go in reverse start order; each is awaited (its `ended` signal, up to the shutdown
        // bound) before `run()` returns.
        var handles: [Task<Void, Never>] = []
        let shutdowns = services.map { _ in GracefulShutdown() }
        let ended = services.map { _ in OneShotSignal() }
        for (index, service) in services.enumerated() {
            logger.info("starting service", metadata: ["service.name": service.name])
            handles.append(Task {
                do {
                    try await GracefulShutdown.$current.withValue(shutdowns[index]) { try await service.run() }
                    continuation.yield(.finished(index: index, error: nil))
                } catch {
                    continuation.yield(.finished(index: index, error: error))
                }
                ended[index].fire()
            })
        }

        // Wait for the first reason to stop: a signal, a service ending, or cancellation.
        var firstError: (any Error)?
        var stopped = Set<Int>()
        await withTaskCancellationHandler {
            for await event in events {
                switch event {
                case .finished(let index, let error):
                    stopped.insert(index)
                    if let error, !(error is CancellationError) {
                        logger.error("service failed", metadata: ["service.name": services[index].name, "error": "\(error)"])
                        firstError = error
                    } else {
                        logger.info("service finished", metadata: ["service.name": services[index].name])
                    }
                case .signal(let number):
                    if number != 0 { logger.notice("shutting down", metadata: ["signal": "\(number)"]) }
                }
                return
            }
        } onCancel: {
            continuation.yield(.signal(0))
        }
        await stopInReverse(handles, shutdowns, ended, skipping: stopped, deadline: .now + shutdownTimeout)
        continuation.finish()
        if let firstError { throw firstError }
    }

    private func stopInReverse(_ handles: [Task<Void, Never>], _ shutdowns: [GracefulShutdown], _ ended: [OneShotSignal],
                               skipping stopped: Set<Int>, deadline: ContinuousClock.Instant) async {
        for index in handles.indices.reversed() where !stopped.contains(index) {
            let name = services[index].name
            if shutdowns[index].hasHandlers {
                shutdowns[index].trigger()
                if await ended[index].wait(until: min(deadline, .now + gracefulTimeout)) {
                    logger.info("service finished gracefully", metadata: ["service.name": name])
                    continue
                }
                logger.warning("service did not finish within the graceful timeout; cancelling it", metadata: ["service.name": name])
            }
            handles[index].cancel()
            if await ended[index].wait(until: deadline) {
                logger.info("service stopped", metadata: ["service.name": name])
            } else {
                logger.error("service did not stop within the shutdown timeout; leaving it behind", metadata: ["service.name": name])
            }
        }
    }

    /// The signals become events instead of killing the process (cancel the sources to stop).
    public static func installSignalHandlers(_ signals: [Int32], _ handler: @escaping @Sendable (Int32) -> Void) -> [any DispatchSourceSignal] {
        signals.map { number in
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
            source.setEventHandler { handler(number) }
            source.resume()
            return source
        }
    }
}

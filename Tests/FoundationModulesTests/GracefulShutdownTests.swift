import Foundation
import Lifecycle
import ServiceLogging
import Synchronization
import Testing

@Suite("Service group's graceful phase")
struct ServiceGroupGracefulTests {
    /// What each service saw, in order.
    final class Journal: Sendable {
        let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// A loop that, told to finish, completes the item in hand (`finishTime`) and returns.
    struct Worker: Service {
        let name: String
        let journal: Journal
        let finishTime: Duration
        func run() async throws {
            let finishing = Atomic<Bool>(false)
            try await withGracefulShutdownHandler {
                while !finishing.load(ordering: .relaxed) {
                    try await Task.sleep(for: .milliseconds(5))
                }
                journal.add("\(name) finishing")
                try await Task.sleep(for: finishTime)
                journal.add("\(name) finished its batch")
            } onGracefulShutdown: {
                finishing.store(true, ordering: .relaxed)
            }
        }
    }

    /// A service that knows only cancellation.
    struct Plain: Service {
        let name: String
        let journal: Journal
        func run() async throws {
            do {
                try await Task.sleep(for: .seconds(60))
            } catch {
                journal.add("\(name) cancelled")
                throw error
            }
        }
    }

    @Test("told to stop, a service that handles the graceful phase finishes its batch uncancelled; one that does not is cancelled at once")
    func gracefulThenCancelled() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Plain(name: "http", journal: journal),
                                            Worker(name: "projection", journal: journal, finishTime: .milliseconds(300))],
                                 handlesSignals: false, shutdownTimeout: .seconds(5), gracefulTimeout: .seconds(2), logger: .disabled)
        let task = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        task.cancel()
        _ = await task.result
        #expect(journal.all == ["projection finishing", "projection finished its batch", "http cancelled"])
        #expect(ContinuousClock.now - start < .seconds(2), "the plain service waited for a graceful phase it does not have")
    }

    @Test("a service still busy when the graceful timeout passes is cancelled, within the shutdown bound")
    func gracefulTimeout() async throws {
        let journal = Journal()
        let group = ServiceGroup(services: [Worker(name: "slow", journal: journal, finishTime: .seconds(30))],
                                 handlesSignals: false, shutdownTimeout: .seconds(5), gracefulTimeout: .milliseconds(300), logger: .disabled)
        let task = Task { try await group.run() }
        try await Task.sleep(for: .milliseconds(100))
        let start = ContinuousClock.now
        task.cancel()
        _ = await task.result
        #expect(journal.all == ["slow finishing"])
        #expect(ContinuousClock.now - start < .seconds(3))
    }
}

import Foundation
import Lifecycle
import ServiceLogging
import Synchronization
import Testing

@Suite("Owned tasks")
struct TaskSetTests {
    /// Tasks running now, and how many ran to their end or were cancelled.
    final class Tally: Sendable {
        let state = Mutex((running: 0, finished: 0, cancelled: 0))
        func enter() { state.withLock { $0.running += 1 } }
        func leave(cancelled: Bool) {
            state.withLock {
                $0.running -= 1
                if cancelled { $0.cancelled += 1 } else { $0.finished += 1 }
            }
        }
        var running: Int { state.withLock { $0.running } }
        var finished: Int { state.withLock { $0.finished } }
        var cancelled: Int { state.withLock { $0.cancelled } }
    }

    static func work(_ tally: Tally, for duration: Duration) async {
        tally.enter()
        let ended = (try? await Task.sleep(for: duration)) != nil
        tally.leave(cancelled: !ended)
    }

    @Test("stopped by its service group, a task set lets nothing outlive the group: short tasks finish, long ones are cancelled and waited for")
    func groupShutdownLeavesNothingRunning() async throws {
        let tally = Tally()
        let tasks = TaskSet()
        let group = ServiceGroup(services: [tasks], handlesSignals: false, shutdownTimeout: .seconds(5),
                                 gracefulTimeout: .milliseconds(500), logger: .disabled)
        let running = Task { try await group.run() }
        for _ in 0..<5 { tasks.spawn { await Self.work(tally, for: .milliseconds(100)) } }
        for _ in 0..<5 { tasks.spawn { await Self.work(tally, for: .seconds(60)) } }
        while tally.running < 10 { try await Task.sleep(for: .milliseconds(5)) }
        let start = ContinuousClock.now
        running.cancel()
        try await running.value
        #expect(tally.running == 0, "a task outlived the group's shutdown")
        #expect(tasks.count == 0)
        #expect(tally.finished == 5, "the short tasks were not let finish in the graceful phase")
        #expect(tally.cancelled == 5)
        #expect(ContinuousClock.now - start < .seconds(3))
    }

    @Test("a task started after the set was shut down still runs, cancelled, and is waited for")
    func lateTaskStartsCancelled() async {
        let tally = Tally()
        let tasks = TaskSet()
        await tasks.shutdown()
        tasks.spawn { await Self.work(tally, for: .seconds(60)) }
        await tasks.waitForAll()
        #expect(tally.cancelled == 1)
        #expect(tally.running == 0)
    }

    @Test("a scope's tasks have ended when the scope returns")
    func scopeWaits() async {
        let tally = Tally()
        let tasks = TaskSet()
        await tasks.scope(cancelling: false) {
            for _ in 0..<3 { tasks.spawn { await Self.work(tally, for: .milliseconds(50)) } }
        }
        #expect(tally.finished == 3)
        #expect(tally.running == 0)
    }
}

@Suite("Coalescer")
struct CoalescerTests {
    @Test("callers arriving while a run is in flight share the next run, each gets its run's output, and no run is left behind")
    func callersShareRuns() async throws {
        let runs = Mutex<[[Int]]>([])
        let inFlight = Atomic<Int>(0)
        let coalescer = Coalescer<Int, [Int]>(maxItems: 4) { items in
            inFlight.add(1, ordering: .relaxed)
            defer { inFlight.subtract(1, ordering: .relaxed) }
            runs.withLock { $0.append(items) }
            try await Task.sleep(for: .milliseconds(200))
            return items
        }
        // The first caller runs alone; the nine arriving during its run wait and are taken four at a time.
        let first = Task { try await coalescer.run([0]) }
        while runs.withLock({ $0.isEmpty }) { try await Task.sleep(for: .milliseconds(1)) }
        let outputs = try await withThrowingTaskGroup(of: (Int, [Int]).self) { group in
            for caller in 1...9 { group.addTask { (caller, try await coalescer.run([caller])) } }
            var outputs: [Int: [Int]] = [:]
            for try await (caller, output) in group { outputs[caller] = output }
            return outputs
        }
        #expect(try await first.value == [0])
        let all = runs.withLock { $0 }
        #expect(all.first == [0])
        #expect(all.count <= 5, "the callers did not share runs: \(all)")
        #expect(all.dropFirst().allSatisfy { $0.count <= 4 })
        #expect(Set(all.flatMap { $0 }) == Set(0...9))
        for (caller, output) in outputs {
            #expect(output.contains(caller), "caller \(caller) got another run's output")
            #expect(all.contains(output))
        }
        #expect(inFlight.load(ordering: .relaxed) == 0)
    }

    @Test("a failed run fails every caller of that run, and the next run goes on")
    func failureReachesItsRun() async throws {
        struct Refused: Error {}
        let coalescer = Coalescer<Int, Int>(maxItems: 10) { items in
            try await Task.sleep(for: .milliseconds(20))
            if items.contains(13) { throw Refused() }
            return items.count
        }
        await #expect(throws: Refused.self) { try await coalescer.run([13]) }
        #expect(try await coalescer.run([1, 2]) == 2)
    }
}

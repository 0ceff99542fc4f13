import BlockingCalls
import Foundation
import Kafka
import ServiceLogging
import Testing

/// What a blocking call costs the rest of the process: nothing. Tasks keep running while calls
/// block, as many calls at once as there are task threads and more.
@Suite("Blocking calls leave the task threads free", .timeLimit(.minutes(1)))
struct BlockingCallTests {
    /// How late a task's 10 ms sleep wakes, at worst, while `load` runs.
    static func worstLateness(during load: @escaping @Sendable () async -> Void) async -> Duration {
        async let loaded: Void = load()
        var worst = Duration.zero
        for _ in 0..<40 {
            let started = ContinuousClock.now
            try? await Task.sleep(for: .milliseconds(10))
            await Task.detached {}.value
            worst = max(worst, ContinuousClock.now - started - .milliseconds(10))
        }
        await loaded
        return worst
    }

    static var callsAtOnce: Int { 2 * ProcessInfo.processInfo.activeProcessorCount + 2 }

    @Test("calls that block for 0.6 s, more of them than task threads, delay no task by more than 0.3 s")
    func blockingCallsDoNotHoldTasks() async {
        let worst = await Self.worstLateness {
            await withTaskGroup(of: Void.self) { group in
                for _ in 0..<Self.callsAtOnce {
                    group.addTask { _ = await BlockingCall.run("test.blocking") { usleep(600_000) } }
                }
            }
        }
        #expect(worst < .milliseconds(300), "a task's sleep woke \(worst) late")
    }

    @Test("""
        Kafka clients opened while the broker refuses connections (librdkafka's constructor then waits \
        about a second) delay no task by more than 0.3 s, and replaced admin clients are released off them
        """)
    func openingClientsAgainstADownBrokerDoesNotHoldTasks() async throws {
        let refused = "127.0.0.1:\(try closedPort())"
        let admins = (0..<Self.callsAtOnce).map { index in
            ReplaceableKafkaAdmin(bootstrapServers: refused, clientID: "blocking-test-\(index)", timeout: .seconds(1), logger: .disabled)
        }
        let opened = ContinuousClock.now
        let worst = await Self.worstLateness {
            await withTaskGroup(of: Void.self) { group in
                for admin in admins {
                    group.addTask {
                        let client = try? await admin.admin()
                        admin.replace(client)
                        _ = try? await admin.admin()
                        admin.replace()
                    }
                }
            }
        }
        #expect(worst < .milliseconds(300), "a task's sleep woke \(worst) late")
        print("opened and replaced \(admins.count) admin clients against a refused broker in \(ContinuousClock.now - opened)")
    }

    /// A loopback port nothing listens on (bound, then closed).
    func closedPort() throws -> Int {
        let socket = Foundation.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(socket, $0, length) == 0 && getsockname(socket, $0, &length) == 0 }
        }
        try #require(bound)
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

import BackboneTestSupport
import Contracts
import Foundation
import Testing

/// Issue #15: `/readyz` goes false during an outage of PostgreSQL or the broker and true
/// again after it; the consumers resume by themselves, without a restart; nothing accepted
/// is lost or counted twice. The services run as separate processes (`.build`'s executables).
@Suite("Outages of PostgreSQL and the broker", .serialized, .enabled(if: Integration.isEnabled), .timeLimit(.minutes(4)))
struct OutageTests {
    static let materials = ["outage-a", "outage-b", "outage-c"]

    /// Every service answers `/readyz` 503 with `Retry-After` within `timeout`.
    static func allNotReady(_ stack: FaultStack, timeout: Duration = .seconds(15)) async -> [String: String] {
        var last: [String: String] = [:]
        _ = await Integration.eventually(timeout: timeout, every: .milliseconds(250)) {
            for service in FaultStack.services {
                let answer = await stack.readiness(service)
                last[service] = answer.map { "\($0.status) Retry-After: \($0.retryAfter ?? "none")" } ?? "no answer"
            }
            return last.values.allSatisfy { $0.hasPrefix("503 Retry-After: ") && !$0.hasSuffix("none") }
        }
        return last
    }

    static func settle(_ stack: FaultStack, _ load: ReadingLoadDriver) async throws -> ReadModelAudit {
        var audit = ReadModelAudit()
        _ = try await Integration.eventually(timeout: .seconds(60), every: .milliseconds(500)) {
            audit = try await ReadModelAudit.audit(load.snapshot.accepted, client: stack.client)
            return audit.isExact
        }
        return audit
    }

    @Test("PostgreSQL down longer than the consumers' retries: 503 with Retry-After during it, ready within 30 s after, every accepted event projected once")
    func postgresOutage() async throws {
        try await FaultStack.with("pg-outage") { stack in
            try stack.startAll()
            // A second progress member, killed during the outage: the group rebalances while the
            // database is down, so the survivor's rebalance listener meets the outage.
            try stack.spawn("progress-projector")
            try #require(await stack.waitReady(timeout: .seconds(60)) != nil, "not ready:\n\(stack.logs)")
            try await stack.registerMaterials(Self.materials)
            let load = ReadingLoadDriver()
            let loading = Task { await load.run(stack: stack, users: 4, materials: Self.materials, seed: 0x15) }
            try await Task.sleep(for: .seconds(2))

            await stack.stopPostgres()
            stack.kill("progress-projector", instance: 1)
            let during = await Self.allNotReady(stack)
            #expect(during.values.allSatisfy { $0.hasPrefix("503 Retry-After: ") && !$0.hasSuffix("none") }, "\(during)")
            // Longer than the session timeout (6 s) plus the rebalance listener's attempts.
            try await Task.sleep(for: .seconds(10))
            try await stack.startPostgres()
            let recovery = await stack.waitReady()
            #expect(recovery != nil, "not ready 30 s after PostgreSQL came back:\n\(stack.logs)")
            try await Task.sleep(for: .seconds(2))
            load.stop()
            await loading.value

            let audit = try await Self.settle(stack, load)
            #expect(audit.isExact, "\(audit)\n\(stack.logs)")
            #expect(audit.accepted > 0)
            #expect(load.snapshot.violations.isEmpty, "\(load.snapshot.violations.prefix(5))")
            let exit = stack.terminateAll()
            #expect(exit < .seconds(stack.shutdownTimeoutSeconds + 3))
            print("fault-figures postgres-outage: recovery \(recovery.map { "\($0)" } ?? "none"), \(audit), 503s \(load.snapshot.unavailable), sigterm \(exit)")
        }
    }

    @Test("broker down longer than the producer's timeout: ingest answers 503 with Retry-After, readiness false then true within 30 s, nothing accepted lost")
    func brokerOutage() async throws {
        try await FaultStack.with("broker-outage") { stack in
            try stack.startAll()
            try #require(await stack.waitReady(timeout: .seconds(60)) != nil, "not ready:\n\(stack.logs)")
            try await stack.registerMaterials(Self.materials)
            let load = ReadingLoadDriver()
            let loading = Task { await load.run(stack: stack, users: 4, materials: Self.materials, seed: 0x16) }
            try await Task.sleep(for: .seconds(2))

            try stack.brokersDown()
            let during = await Self.allNotReady(stack)
            #expect(during.values.allSatisfy { $0.hasPrefix("503 Retry-After: ") && !$0.hasSuffix("none") }, "\(during)")
            // Longer than the producer's delivery timeout (10 s).
            try await Task.sleep(for: .seconds(12))
            let unavailable = load.snapshot.unavailable
            try stack.brokersUp()
            let recovery = await stack.waitReady()
            #expect(recovery != nil, "not ready 30 s after the broker came back:\n\(stack.logs)")
            try await Task.sleep(for: .seconds(2))
            load.stop()
            await loading.value

            #expect(unavailable > 0, "ingest never answered 503 while the broker was down")
            let audit = try await Self.settle(stack, load)
            #expect(audit.isExact, "\(audit)\n\(stack.logs)")
            #expect(load.snapshot.violations.isEmpty, "\(load.snapshot.violations.prefix(5))")
            let exit = stack.terminateAll()
            #expect(exit < .seconds(stack.shutdownTimeoutSeconds + 3))
            print("fault-figures broker-outage: recovery \(recovery.map { "\($0)" } ?? "none"), \(audit), 503s \(unavailable), sigterm \(exit)")
        }
    }
}

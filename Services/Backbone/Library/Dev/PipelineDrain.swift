import Foundation
import Kafka
import Lifecycle
import Postgres
import Projection
import ServiceLogging
import ServiceRuntime
import Synchronization

/// The last stop of `backbone dev` before its consumers: the embedded broker forgets every
/// record when the process exits, so a record accepted but not yet processed would have to come
/// back from the broker journal at the next start (or, without one, be lost with the broker and
/// a resend answered `duplicate`); waiting for the consumers is the quicker way. Placed in the service group after the
/// consumers and before the HTTP services, it is asked to stop once every HTTP service has
/// stopped taking requests, and then waits — at most `limit` — until the projections of this
/// process have processed every record of their topics, and have stayed level for
/// `settle` (a committed batch publishes the next stage's records right after its commit).
/// Entries still in an outbox table are safe: they are published on the next start.
struct PipelineDrain: Service {
    let name = "pipeline-drain"
    let database: PostgresClient
    let admin: KafkaAdmin
    /// The stack's consumer groups, whose backlog the drain waits out.
    let groups: RunningConsumerGroups
    let limit: Duration
    var settle: Duration = .milliseconds(750)
    var interval: Duration = .milliseconds(100)
    /// Whether the services produce through the broker journal (`DevBrokerJournal`), which
    /// keeps what the drain could not wait for.
    var journaled = false
    let logger: Logger

    func run() async throws {
        while !Task.isCancelled { try? await Task.sleep(for: .seconds(3600)) }
        // A second Ctrl-C (or SIGTERM, SIGHUP) stops the wait; the group's own handlers keep
        // the signals from killing the process.
        let interrupted = Interrupted()
        let sources = ServiceGroup.installSignalHandlers([SIGINT, SIGTERM, SIGHUP]) { _ in
            interrupted.flag.store(true, ordering: .relaxed)
        }
        defer { sources.forEach { $0.cancel() } }
        // The drain's own queries must not see the shutdown's cancellation.
        _ = await Task { await drain(interrupted: { interrupted.flag.load(ordering: .relaxed) }) }.value
    }

    private final class Interrupted: Sendable {
        let flag = Atomic<Bool>(false)
    }

    /// Waits until nothing is left to process; returns what was left (empty when drained).
    @discardableResult
    func drain(interrupted: @Sendable () -> Bool = { false }) async -> [String: Int64] {
        let started = ContinuousClock.now
        var levelSince: ContinuousClock.Instant?
        var left: [String: Int64] = [:]
        var announced = false
        while true {
            let now = ContinuousClock.now
            var known = true
            do {
                left = try await Self.backlog(of: groups.groups, client: database, admin: admin)
                    .filter { $0.value > 0 }
            } catch {
                logger.warning("cannot check what the consumers still have to process", metadata: ["error": "\(error)"])
                known = false
            }
            if known && left.isEmpty {
                let since = levelSince ?? now
                levelSince = since
                if now - since >= settle {
                    logger.info("every accepted record is processed", metadata: ["drain.seconds": "\(String(format: "%.2f", CommandLoop.seconds(now - started)))"])
                    // The next start has nothing of this run's to check (`DevRecovery`).
                    do { try await DevRecovery.markChecked(through: Date(), database: database) } catch {
                        logger.warning("could not mark what the consumers processed", metadata: ["error": "\(error)"])
                    }
                    return [:]
                }
            } else {
                levelSince = nil
                if !announced {
                    announced = true
                    logger.notice("requests stopped; waiting for the consumers to process what was accepted "
                                  + "(the embedded broker forgets it on exit; Ctrl-C again to stop now)",
                                  metadata: ["drain.limit": "\(limit)", "drain.records": "\(Self.describe(left))"])
                }
            }
            if now - started >= limit || interrupted() {
                if known && left.isEmpty {
                    logger.notice("stopped again while the consumers settled; every record they were given is processed")
                } else {
                    let what = interrupted() ? "stopped again while waiting" : "consumers did not finish within the drain limit"
                    let metadata = ["drain.limit": "\(limit)", "drain.records": "\(Self.describe(left))"]
                    if journaled {
                        logger.warning("\(what); records not yet processed stay in the broker journal and go to the next start's broker",
                                       metadata: metadata)
                    } else {
                        logger.error("\(what); records not yet processed are lost with the embedded broker", metadata: metadata)
                    }
                }
                return left
            }
            try? await Task.sleep(for: interval)
        }
    }

    static func describe(_ backlog: [String: Int64]) -> String {
        backlog.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" }.joined(separator: ",")
    }
}

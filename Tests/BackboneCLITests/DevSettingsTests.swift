@testable import BackboneCLI
import Foundation
import ServiceRuntime
import Settings
import Testing

@Suite("backbone dev settings")
struct DevSettingsTests {
    @Test("backbone dev refuses invalid settings as the executables do, listing every problem in one error")
    func everyProblemAtOnce() {
        #expect(throws: Never.self) { try ServiceCatalog.validateSettings([:]) }
        do {
            try ServiceCatalog.validateSettings(["INGEST_MAX_BATCH_EVENTS": "many", "REALTIME_HISTORY_EVENTS": "-5",
                                                 "LOG_LEVEL": "loud", "KAFKA_SESSION_TIMEOUT_MS": "soon"])
            Issue.record("invalid settings were accepted")
        } catch {
            let text = error.description
            for key in ["INGEST_MAX_BATCH_EVENTS", "REALTIME_HISTORY_EVENTS", "LOG_LEVEL", "KAFKA_SESSION_TIMEOUT_MS"] {
                #expect(text.contains(key), "\(key) is named")
            }
            #expect(Set(error.problems).count == error.problems.count, "each problem once")
        }
    }
    @Test("a zero or absurd timing that would leave a consumer restarting for ever or a loop spinning is refused, naming the allowed range")
    func absurdTimings() {
        let zero = ["KAFKA_SESSION_TIMEOUT_MS": "0", "PROGRESS_OUTBOX_INTERVAL_MS": "0", "TRANSCODE_POLL_MS": "0",
                    "TRANSCODE_LEASE_MS": "0", "INGEST_UPLOAD_OUTBOX_INTERVAL_MS": "0", "ACCOUNT_DELETION_SCHEDULER_INTERVAL_MS": "0",
                    "INGEST_UPLOAD_SWEEP_INTERVAL_MS": "0", "TRANSCODE_OUTBOX_INTERVAL_MS": "0", "TRANSCODE_MAX_BACKOFF_MS": "0",
                    "INGEST_RATE_LIMIT_PER_SECOND": "nan"]
        do {
            try ServiceCatalog.validateSettings(zero)
            Issue.record("zero timings were accepted")
        } catch {
            for key in zero.keys {
                #expect(error.problems.contains { $0.hasPrefix(key + " must be") }, "\(key): \(error.problems)")
            }
            #expect(error.problems.contains("KAFKA_SESSION_TIMEOUT_MS must be within 6000…1800000 (got 0)"), "\(error.problems)")
        }
        #expect(throws: Never.self) {
            try ServiceCatalog.validateSettings(["KAFKA_SESSION_TIMEOUT_MS": "6000", "TRANSCODE_LEASE_MS": "2000", "TRANSCODE_POLL_MS": "100",
                                                 "PROGRESS_OUTBOX_INTERVAL_MS": "300"])
        }
    }

    @Test("a shell that sourced the previous run's dev.env: the settings naming that run's own servers are left out, given ones kept")
    func previousRunLeftOut() {
        let previous = ["DATABASE_URL": "postgres://postgres@127.0.0.1:41495/backbone", "S3_ENDPOINT": "http://127.0.0.1:8333",
                        "S3_BUCKET": "rooms", "KAFKA_BROKERS": "127.0.0.1:45743", DevEnvironment.madeHereKey: "postgres,s3"]
        // Sourced as it was written: both private servers are made again.
        let (sourced, ignored) = DevEnvironment.withoutPreviousRun(previous.merging(["HOME": "/root"]) { $1 }, previous: previous)
        #expect(sourced["DATABASE_URL"] == nil && sourced["S3_ENDPOINT"] == nil && sourced["S3_BUCKET"] == nil)
        #expect(sourced["HOME"] == "/root")
        #expect(Set(ignored) == ["DATABASE_URL", "S3_ENDPOINT", "S3_BUCKET"])
        // Another database given now, or one the previous run was given itself: kept.
        let other = DevEnvironment.withoutPreviousRun(["DATABASE_URL": "postgres://db.example/backbone"], previous: previous)
        #expect(other.0["DATABASE_URL"] == "postgres://db.example/backbone" && other.1.isEmpty)
        let given = previous.merging([DevEnvironment.madeHereKey: "s3"]) { $1 }
        #expect(DevEnvironment.withoutPreviousRun(given, previous: given).0["DATABASE_URL"] == given["DATABASE_URL"])
        // No previous run: nothing left out.
        #expect(DevEnvironment.withoutPreviousRun(previous, previous: [:]).1.isEmpty)
    }
}


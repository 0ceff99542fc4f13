@testable import BackboneCLI
import Foundation
import ServiceRuntime
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
}

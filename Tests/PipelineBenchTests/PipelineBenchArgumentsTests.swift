import Contracts
import Foundation
@testable import PipelineBench
import Testing

@Suite("pipeline-bench: arguments and the load's batch bodies")
struct PipelineBenchArgumentsTests {
    @Test("defaults are 20 s steps; --rates, --step-seconds and the others are read; bad values are usage errors")
    func arguments() throws {
        let defaults = try PipelineBench.parse([])
        #expect(defaults.stepSeconds == 20)
        #expect(defaults.rates.first == 2_000)
        let options = try PipelineBench.parse(["--rates", "1000,3000", "--step-seconds", "60", "--users", "10", "--subscribers", "50"])
        #expect(options.rates == [1_000, 3_000])
        #expect(options.stepSeconds == 60)
        #expect(options.users == 10)
        #expect(options.subscribers == 10)  // never more subscribers than users
        #expect(throws: PipelineBench.UsageError.self) { try PipelineBench.parse(["--rates", "50"]) }
        #expect(throws: PipelineBench.UsageError.self) { try PipelineBench.parse(["--rates", "x"]) }
        #expect(throws: PipelineBench.UsageError.self) { try PipelineBench.parse(["--step-seconds"]) }
        #expect(throws: PipelineBench.UsageError.self) { try PipelineBench.parse(["--bogus"]) }
    }

    @Test("every batch of the load is a valid 100-event upload with fresh event ids")
    func batches() throws {
        let template = try BatchTemplate(session: 3, now: Date())
        let first = try RawReadingEvent.parseBatch(template.batch())
        let second = try RawReadingEvent.parseBatch(template.batch())
        #expect(first.count == 100)
        let ids = Set(first.compactMap(\.rawEventID)).union(second.compactMap(\.rawEventID))
        #expect(ids.count == 200)
    }
}

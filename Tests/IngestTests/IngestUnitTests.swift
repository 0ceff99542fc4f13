import Foundation
import HTTPRouting
import Ingest
import ServiceRuntime
import Settings
import Testing

@Suite("Ingest configuration and rate limiting")
struct IngestUnitTests {
    @Test("defaults match the documented limits and the environment overrides them")
    func configuration() throws {
        var empty = EnvironmentReader([:])
        let defaults = IngestConfiguration.read(from: &empty)
        try empty.validate()
        #expect(defaults.maxBatchEvents == 500)
        #expect(defaults.maxBatchBytes == 1 << 20)
        #expect(defaults.readingEventsTopic == "reading.events.v2")
        #expect(defaults.roomTranscodeTopic == "room.transcode.requests.v1")
        #expect(defaults.materialCacheTTL == .seconds(2))

        var env = EnvironmentReader(["INGEST_MAX_BATCH_EVENTS": "100", "READING_EVENTS_TOPIC": "t.events",
                                     "INGEST_MATERIAL_CACHE_TTL_MS": "500", "INGEST_MONTHLY_UPLOAD_QUOTA_BYTES": "1000"])
        let custom = IngestConfiguration.read(from: &env)
        try env.validate()
        #expect(custom.maxBatchEvents == 100)
        #expect(custom.readingEventsTopic == "t.events")
        #expect(custom.materialCacheTTL == .milliseconds(500))
        #expect(custom.monthlyUploadQuotaBytes == 1000)
    }

    @Test("invalid values are all reported at once")
    func invalidConfiguration() {
        var env = EnvironmentReader(["INGEST_MAX_BATCH_EVENTS": "lots", "INGEST_RATE_LIMIT_PER_SECOND": "-1"])
        _ = IngestConfiguration.read(from: &env)
        #expect(env.problems.count == 2)
    }

    @Test("a user gets the burst, then waits; other users are unaffected")
    func rateLimiter() {
        let limiter = UserRateLimiter(perSecond: 2, burst: 3)
        let start = ContinuousClock.now
        #expect((0..<3).allSatisfy { _ in limiter.acquire("u1", now: start) == nil })
        #expect(limiter.acquire("u1", now: start) == 1)
        #expect(limiter.acquire("u2", now: start) == nil)
        #expect(limiter.acquire("u1", now: start + .milliseconds(600)) == nil)
    }
}

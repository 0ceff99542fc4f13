@testable import AnalyticsAggregator
import Contracts
import Foundation
import ServiceRuntime
import Settings
import Testing

@Suite("Batch folding and history cursors")
struct BatchAndCursorTests {
    @Test("events folded in any order give the same aggregates")
    func orderIndependent() {
        var user = EventFactory(offsetMinutes: 480)
        var events = [
            user.event(.opened, at: user.instant(2026, 5, 1, 23, 50), seconds: 0, session: "a", material: "m1"),
            user.event(.heartbeat, at: user.instant(2026, 5, 1, 23, 59), seconds: 60, session: "a", material: "m1"),
            user.event(.heartbeat, at: user.instant(2026, 5, 2, 0, 1), seconds: 45, session: "a", material: "m1"),
            user.event(.markedAsRead, at: user.instant(2026, 5, 2, 0, 2), seconds: 5, session: "a", material: "m1"),
            user.event(.closed, at: user.instant(2026, 5, 2, 0, 3), seconds: 0, session: "a", material: "m1"),
            user.event(.heartbeat, at: user.instant(2026, 5, 2, 0, 10), seconds: 20, session: "a", material: "m1"),
            user.event(.opened, at: user.instant(2026, 5, 3, 9, 0), seconds: 10, session: "b", material: "m2"),
        ]
        let reference = AnalyticsBatch(events)
        for _ in 0..<20 {
            events.shuffle()
            #expect(AnalyticsBatch(events) == reference)
        }
        #expect(reference.days[.init(user: user.user, day: LocalDay(2026, 5, 1))]?.activeSeconds == 60)
        #expect(reference.days[.init(user: user.user, day: LocalDay(2026, 5, 2))]?.activeSeconds == 70)
        let session = reference.sessions[.init(user: user.user, item: "a")]
        #expect(session?.startedAt == AnalyticsBatch.milliseconds(user.instant(2026, 5, 1, 23, 50)))
        #expect(session?.closedAt == AnalyticsBatch.milliseconds(user.instant(2026, 5, 2, 0, 3)))
        #expect(session?.lastEventAt == AnalyticsBatch.milliseconds(user.instant(2026, 5, 2, 0, 10)))
        #expect(session?.completed == true)
        #expect(reference.daySessions.count == 3)
        #expect(reference.users[user.user]?.offsetMinutes == 480)
    }

    @Test("a cursor is the base64url text it always was, for ids of every length and any bytes")
    func cursorText() {
        for id in ["s", "se", "ses", "sess", "会话-1", "a/b+c?d>e", String(repeating: "x", count: 200)] {
            let cursor = HistoryCursor(startedAtMillis: 1_764_000_000_123, clientSessionID: id)
            let foundation = Data("v1|1764000000123|\(id)".utf8).base64EncodedString()
                .replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
                .replacingOccurrences(of: "=", with: "")
            #expect(cursor.encoded == foundation)
            #expect(HistoryCursor(encoded: foundation) == cursor)
        }
    }

    @Test("a cursor survives the round trip and anything else is refused")
    func cursor() {
        let cursor = HistoryCursor(startedAtMillis: 1_764_000_000_123, clientSessionID: "sess|with/odd+chars")
        #expect(HistoryCursor(encoded: cursor.encoded) == cursor)
        #expect(!cursor.encoded.contains("="))
        #expect(HistoryCursor(encoded: "") == nil)
        #expect(HistoryCursor(encoded: "not a cursor!") == nil)
        #expect(HistoryCursor(encoded: Data("v2|1|x".utf8).base64EncodedString()) == nil)
    }

    @Test("records with impossible offsets, negative deltas or no ids are refused")
    func validation() throws {
        var user = EventFactory(offsetMinutes: 0)
        var event = user.event(at: Date(), seconds: 10)
        try AnalyticsProjection.validate(event)
        event.clientTimezoneOffsetMinutes = 841
        #expect(throws: AnalyticsRecordError.self) { try AnalyticsProjection.validate(event) }
        event.clientTimezoneOffsetMinutes = -720
        event.activeSecondsDelta = -1
        #expect(throws: AnalyticsRecordError.self) { try AnalyticsProjection.validate(event) }
        event.activeSecondsDelta = 1
        event.eventId = ""
        #expect(throws: AnalyticsRecordError.self) { try AnalyticsProjection.validate(event) }
    }

    @Test("configuration reads its keys and reports every bad one")
    func configuration() throws {
        var good = EnvironmentReader(["ANALYTICS_STREAK_THRESHOLD_SECONDS": "120", "ANALYTICS_BATCH_SIZE": "50",
                                                     "ANALYTICS_BATCH_WAIT_MS": "20", "READING_EVENTS_TOPIC": "t",
                                      "KAFKA_SESSION_TIMEOUT_MS": "6000"])
        let c = AnalyticsConfiguration.read(from: &good)
        try good.validate()
        #expect(c.streakThresholdSeconds == 120 && c.batchSize == 50 && c.batchWait == .milliseconds(20) && c.topic == "t")
        #expect(c.groupID == "analytics-aggregator")
        #expect(c.sessionTimeout == .seconds(6))
        var empty = EnvironmentReader([:])
        #expect(AnalyticsConfiguration.read(from: &empty).sessionTimeout == .seconds(10))
        var bad = EnvironmentReader(["ANALYTICS_STREAK_THRESHOLD_SECONDS": "0", "ANALYTICS_BATCH_SIZE": "x"])
        _ = AnalyticsConfiguration.read(from: &bad)
        #expect(bad.problems.count == 2)
    }
}

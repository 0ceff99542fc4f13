import Contracts
import Foundation
import Postgres

/// Reads of the analytics tables for one user.
public struct AnalyticsReadModel: Sendable {
    let database: PostgresClient

    public init(database: PostgresClient) { self.database = database }

    /// The offset (minutes east of UTC) of the user's latest event, if they have any.
    public func latestOffsetMinutes(user: String) async throws -> Int? {
        let rows = try await database.queryPrepared("SELECT tz_offset_minutes FROM analytics_users WHERE user_id = $1", [user])
        return try rows.first?.decode(Int.self, "tz_offset_minutes")
    }

    /// Active seconds per local day with any event, oldest first, optionally within a window.
    public func dailyActivity(user: String, in window: ClosedRange<LocalDay>? = nil) async throws -> [DailyActivity] {
        let sql = """
            SELECT day - DATE '1970-01-01' AS n, active_seconds FROM analytics_daily
            WHERE user_id = $1 AND day BETWEEN DATE '1970-01-01' + $2::int AND DATE '1970-01-01' + $3::int
            ORDER BY day
            """
        let rows = try await database.queryPrepared(sql, [user, window?.lowerBound.number ?? -1_000_000, window?.upperBound.number ?? 1_000_000])
        var days: [DailyActivity] = []
        days.reserveCapacity(rows.count)
        for row in rows {
            days.append(DailyActivity(day: LocalDay(number: try row.decode(Int.self, "n")),
                                      activeSeconds: try row.decode(Int.self, "active_seconds")))
        }
        return days
    }

    /// Distinct materials read on `day`, and distinct materials ever completed.
    public func materialCounts(user: String, day: LocalDay) async throws -> (readOnDay: Int, completed: Int) {
        let rows = try await database.queryPrepared("""
            SELECT (SELECT count(*) FROM analytics_day_materials WHERE user_id = $1 AND day = DATE '1970-01-01' + $2::int) AS read,
                   (SELECT count(*) FROM analytics_completions WHERE user_id = $1) AS completed
            """, [user, day.number])
        guard let row = rows.first else { return (0, 0) }
        return (try row.decode(Int.self, "read"), try row.decode(Int.self, "completed"))
    }

    /// Up to `limit` sessions, newest start first, after `cursor`; plus the cursor of the
    /// next page when there may be more.
    public func sessions(user: String, limit: Int, after cursor: HistoryCursor?) async throws -> LearningHistoryResponse {
        let columns = """
            client_session_id, material_id, active_seconds, completed,
            (extract(epoch FROM started_at) * 1000)::bigint AS started_ms,
            (extract(epoch FROM COALESCE(closed_at, last_event_at)) * 1000)::bigint AS ended_ms
            """
        let rows: PostgresRows
        if let cursor {
            rows = try await database.queryPrepared("""
                SELECT \(columns) FROM analytics_sessions
                WHERE user_id = $1
                  AND (started_at, client_session_id) < (TIMESTAMPTZ 'epoch' + INTERVAL '1 millisecond' * $2::bigint, $3)
                ORDER BY started_at DESC, client_session_id DESC LIMIT $4
                """, [user, cursor.startedAtMillis, cursor.clientSessionID, limit + 1])
        } else {
            rows = try await database.queryPrepared("""
                SELECT \(columns) FROM analytics_sessions WHERE user_id = $1
                ORDER BY started_at DESC, client_session_id DESC LIMIT $2
                """, [user, limit + 1])
        }
        var sessions: [LearningHistoryResponse.Session] = []
        var last: HistoryCursor?
        for row in rows.prefix(limit) {
            let started = try row.decode(Int64.self, "started_ms")
            let id = try row.decode(String.self, "client_session_id")
            sessions.append(LearningHistoryResponse.Session(
                clientSessionId: id, materialId: try row.decode(String.self, "material_id"),
                startedAt: Date(timeIntervalSince1970: Double(started) / 1000),
                endedAt: Date(timeIntervalSince1970: Double(try row.decode(Int64.self, "ended_ms")) / 1000),
                activeSeconds: try row.decode(Int.self, "active_seconds"), completed: try row.decode(Bool.self, "completed")))
            last = HistoryCursor(startedAtMillis: started, clientSessionID: id)
        }
        return LearningHistoryResponse(sessions: sessions, nextCursor: rows.count > limit ? last?.encoded : nil)
    }
}

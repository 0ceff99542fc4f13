import Contracts
import Foundation
import Postgres
import Projection

/// The statements that write the read model: the event log by COPY, then every aggregate in
/// one statement of set-based upserts (one per table), rows bound as arrays and sorted by key
/// (a stable lock order between concurrent writers).
enum AnalyticsWriter {
    /// `epoch ms` → timestamptz, exactly.
    static let fromMillis = "TIMESTAMPTZ 'epoch' + INTERVAL '1 millisecond' *"
    /// Day number → date.
    static let fromDay = "DATE '1970-01-01' +"
    /// Stands for "no value" in a bigint array of optional timestamps.
    static let noTime = Int64.min

    /// The event log (COPY, with a staging fallback for replays); columns in COPY order.
    static let eventLog = EventLog(table: "analytics_events", stagingTable: "analytics_stage", columns: [
        ("event_id", "text"), ("user_id", "text"), ("client_session_id", "text"), ("material_id", "text"),
        ("event_type", "text"), ("active_seconds", "integer"), ("client_ts", "timestamptz"),
        ("tz_offset_minutes", "integer"), ("local_day", "date"), ("received_at", "timestamptz"),
    ])

    /// Inserts distinct events into the log; returns those that were not there yet.
    ///
    /// See ``EventLog`` for how the usual batch and a replayed one are logged.
    static func logEvents(_ events: [ReadingEventRecord], in connection: PostgresConnection) async throws -> [ReadingEventRecord] {
        var rows = PostgresCopyRows(reservingBytes: events.count * 200)
        for event in events { appendLogRow(event, to: &rows) }
        let known = try await eventLog.insert(rows, in: connection)
        if known.isEmpty { return events }
        return events.filter { !known.contains($0.eventId) }
    }

    /// One event log row, in `eventLog.columns` order; instants at the contract's millisecond
    /// precision, as the aggregates have them.
    static func appendLogRow(_ e: ReadingEventRecord, to rows: inout PostgresCopyRows) {
        rows.append(e.eventId); rows.append(e.userId); rows.append(e.clientSessionId); rows.append(e.materialId)
        rows.append(e.eventType.rawValue); rows.append(e.activeSecondsDelta)
        rows.append(instant(AnalyticsBatch.milliseconds(e.clientTimestamp))); rows.append(e.clientTimezoneOffsetMinutes)
        rows.append(LocalDay(instant: e.clientTimestamp, offsetMinutes: e.clientTimezoneOffsetMinutes).description)
        rows.append(instant(AnalyticsBatch.milliseconds(e.receivedAt)))
        rows.endRow()
    }

    /// The instant of `millis` epoch milliseconds (exact to the microsecond in Postgres text).
    static func instant(_ millis: Int64) -> Date { Date(timeIntervalSince1970: Double(millis) / 1000) }

    /// Folds a batch of new events into every aggregate, in one statement: each table's
    /// upsert is a data-modifying CTE of it (they touch different tables, each key once).
    /// The streak runs of the users with a day that reached `streakThresholdSeconds` with this
    /// batch are recomputed in the same statement.
    static func apply(_ batch: AnalyticsBatch, streakThresholdSeconds: Int, in connection: PostgresConnection) async throws {
        let days = batch.days.sorted { $0.key < $1.key }
        let materials = batch.dayMaterials.sorted { $0.key < $1.key }
        let daySessions = batch.daySessions.sorted()
        let completions = batch.completions.sorted { $0.key < $1.key }
        let sessions = batch.sessions.sorted { $0.key < $1.key }
        let users = batch.users.sorted { $0.key < $1.key }
        try await connection.execute(upsertAll, [
            days.map(\.key.user), days.map(\.key.day.number), days.map { Int64($0.value.activeSeconds) }, days.map(\.value.events),
            materials.map(\.key.user), materials.map(\.key.day.number), materials.map(\.key.item), materials.map { $0.value ? 1 : 0 },
            daySessions.map(\.user), daySessions.map(\.day.number), daySessions.map(\.item),
            completions.map(\.key.user), completions.map(\.key.item), completions.map(\.value),
            sessions.map(\.key.user), sessions.map(\.key.item), sessions.map(\.value.materialID),
            sessions.map(\.value.startedAt), sessions.map(\.value.lastEventAt), sessions.map { $0.value.closedAt ?? noTime },
            sessions.map { Int64($0.value.activeSeconds) }, sessions.map { $0.value.completed ? 1 : 0 },
            sessions.map(\.value.events), noTime,
            users.map(\.key), users.map(\.value.at), users.map(\.value.offsetMinutes), streakThresholdSeconds,
        ])
    }

    /// Every aggregate's upsert. Days: summed seconds and events. Materials of a day:
    /// completed if any event completed. Sessions of a day: membership. Completions: the
    /// first. Sessions: earliest start (its material), latest event, latest `closed`, summed
    /// seconds and events, completed if any event completed. Users: the offset of the latest
    /// event by client time.
    ///
    /// Streak runs (`StreakRuns`): the days whose total crossed the threshold (`$28`) — at or
    /// above it now, below it without this batch's seconds — are `crossed`. Every sub-statement
    /// sees the tables as they were before the statement, so a crossed user's qualifying days
    /// are those that qualified before plus the crossed ones (a day never stops qualifying); their
    /// islands are the user's runs now. Each old run lies within a new one (runs only grow and
    /// merge): the runs starting inside a new run are deleted, the new ones inserted or extended
    /// — disjoint rows. The qualifying days are read per crossed user (a lateral index scan).
    ///
    /// Users last (every user of the batch is among them): besides the offset, the row the
    /// summary reads (`UserSummary`), from what the other upserts return — new completions
    /// (`xmax = 0`: the row was inserted, not updated), the latest day with active time, the
    /// crossed users' runs as they are now, and the latest day with materials and its new rows —
    /// gathered by one grouping of their union (the planner knows nothing of the sizes of a
    /// CTE's rows, and joins of them could come out as nested loops).
    static let upsertAll = """
        WITH daily AS (
            INSERT INTO analytics_daily (user_id, day, active_seconds, events)
            SELECT t.u, \(fromDay) t.d, t.a, t.n FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[]) AS t(u, d, a, n)
            ON CONFLICT (user_id, day) DO UPDATE
                SET active_seconds = analytics_daily.active_seconds + EXCLUDED.active_seconds,
                    events = analytics_daily.events + EXCLUDED.events
            RETURNING user_id, day, active_seconds
        ), months AS (
            \(ActivityMonths.upsert(from: "daily"))
        ), day_materials AS (
            INSERT INTO analytics_day_materials (user_id, day, material_id, completed)
            SELECT t.u, \(fromDay) t.d, t.m, t.c <> 0 FROM unnest($5::text[], $6::int[], $7::text[], $8::int[]) AS t(u, d, m, c)
            ON CONFLICT (user_id, day, material_id) DO UPDATE
                SET completed = analytics_day_materials.completed OR EXCLUDED.completed
            RETURNING user_id, day, xmax = 0 AS inserted
        ), day_sessions AS (
            INSERT INTO analytics_day_sessions (user_id, day, client_session_id)
            SELECT t.u, \(fromDay) t.d, t.s FROM unnest($9::text[], $10::int[], $11::text[]) AS t(u, d, s)
            ON CONFLICT DO NOTHING
        ), completions AS (
            INSERT INTO analytics_completions (user_id, material_id, first_completed_at)
            SELECT t.u, t.m, \(fromMillis) t.at FROM unnest($12::text[], $13::text[], $14::bigint[]) AS t(u, m, at)
            ON CONFLICT (user_id, material_id) DO UPDATE
                SET first_completed_at = LEAST(analytics_completions.first_completed_at, EXCLUDED.first_completed_at)
            RETURNING user_id, xmax = 0 AS inserted
        ), sessions AS (
            INSERT INTO analytics_sessions (user_id, client_session_id, material_id, started_at, last_event_at, closed_at,
                                            active_seconds, completed, events)
            SELECT t.u, t.s, t.m, \(fromMillis) t.st, \(fromMillis) t.la, \(fromMillis) NULLIF(t.cl, $24::bigint),
                   t.a, t.c <> 0, t.n
            FROM unnest($15::text[], $16::text[], $17::text[], $18::bigint[], $19::bigint[], $20::bigint[], $21::bigint[],
                        $22::int[], $23::int[]) AS t(u, s, m, st, la, cl, a, c, n)
            ON CONFLICT (user_id, client_session_id) DO UPDATE SET
                material_id = CASE
                    WHEN (EXCLUDED.started_at, EXCLUDED.material_id COLLATE "C")
                         < (analytics_sessions.started_at, analytics_sessions.material_id COLLATE "C")
                    THEN EXCLUDED.material_id ELSE analytics_sessions.material_id END,
                started_at = LEAST(analytics_sessions.started_at, EXCLUDED.started_at),
                last_event_at = GREATEST(analytics_sessions.last_event_at, EXCLUDED.last_event_at),
                closed_at = GREATEST(analytics_sessions.closed_at, EXCLUDED.closed_at),
                active_seconds = analytics_sessions.active_seconds + EXCLUDED.active_seconds,
                completed = analytics_sessions.completed OR EXCLUDED.completed,
                events = analytics_sessions.events + EXCLUDED.events
        ), crossed AS MATERIALIZED (
            SELECT daily.user_id, daily.day
            FROM daily JOIN unnest($1::text[], $2::int[], $3::bigint[]) AS t(u, d, a)
              ON daily.user_id = t.u AND daily.day = \(fromDay) t.d
            WHERE daily.active_seconds >= $28::int AND daily.active_seconds - t.a < $28::int
        ), qualifying AS (
            SELECT q.user_id, q.day FROM (SELECT DISTINCT user_id FROM crossed) AS c
            CROSS JOIN LATERAL (SELECT d.user_id, d.day FROM analytics_daily d
                                WHERE d.user_id = c.user_id AND d.active_seconds >= $28::int) AS q
            UNION SELECT user_id, day FROM crossed
        ), fresh AS MATERIALIZED (
            \(StreakRuns.islands(of: "qualifying"))
        ), merged AS (
            DELETE FROM analytics_streak_runs r USING fresh f
            WHERE r.user_id = f.user_id AND r.start_day > f.start_day AND r.start_day <= f.end_day
        ), runs AS (
            INSERT INTO analytics_streak_runs (user_id, start_day, end_day)
            SELECT user_id, start_day, end_day FROM fresh ORDER BY user_id, start_day
            ON CONFLICT (user_id, start_day) DO UPDATE SET end_day = EXCLUDED.end_day
                WHERE analytics_streak_runs.end_day <> EXCLUDED.end_day
        ), users AS (
            INSERT INTO analytics_users (user_id, latest_event_at, tz_offset_minutes, materials_completed, last_active_day,
                                         longest_streak_days, last_run_start, last_run_end, materials_day, materials_day_count)
            SELECT g.u, \(fromMillis) max(g.at), max(g.tz), count(*) FILTER (WHERE g.completed), max(g.active),
                   COALESCE(max(g.longest), 0), max(g.run_start), max(g.run_end), max(g.m_day), COALESCE(max(g.m_n), 0)
            FROM (SELECT t.u, t.at, t.tz, false, NULL::date, NULL::int, NULL::date, NULL::date, NULL::date, NULL::bigint
                  FROM unnest($25::text[], $26::bigint[], $27::int[]) AS t(u, at, tz)
                  UNION ALL
                  SELECT user_id, NULL, NULL, true, NULL, NULL, NULL, NULL, NULL, NULL FROM completions WHERE inserted
                  UNION ALL
                  SELECT user_id, NULL, NULL, false, day, NULL, NULL, NULL, NULL, NULL FROM daily WHERE active_seconds > 0
                  UNION ALL
                  (SELECT DISTINCT ON (user_id) user_id, NULL, NULL, false, NULL,
                          max(end_day - start_day + 1) OVER (PARTITION BY user_id), start_day, end_day, NULL, NULL
                   FROM fresh ORDER BY user_id, start_day DESC)
                  UNION ALL
                  (SELECT DISTINCT ON (user_id) user_id, NULL, NULL, false, NULL, NULL, NULL, NULL, day,
                          count(*) FILTER (WHERE inserted)
                   FROM day_materials GROUP BY user_id, day ORDER BY user_id, day DESC)
                 ) AS g(u, at, tz, completed, active, longest, run_start, run_end, m_day, m_n)
            GROUP BY g.u HAVING count(g.at) > 0
            ORDER BY g.u
            ON CONFLICT (user_id) DO UPDATE SET
                tz_offset_minutes = CASE
                    WHEN (EXCLUDED.latest_event_at, EXCLUDED.tz_offset_minutes)
                         > (analytics_users.latest_event_at, analytics_users.tz_offset_minutes)
                    THEN EXCLUDED.tz_offset_minutes ELSE analytics_users.tz_offset_minutes END,
                latest_event_at = GREATEST(analytics_users.latest_event_at, EXCLUDED.latest_event_at),
                materials_completed = analytics_users.materials_completed + EXCLUDED.materials_completed,
                last_active_day = GREATEST(analytics_users.last_active_day, EXCLUDED.last_active_day),
                longest_streak_days = GREATEST(analytics_users.longest_streak_days, EXCLUDED.longest_streak_days),
                last_run_start = COALESCE(EXCLUDED.last_run_start, analytics_users.last_run_start),
                last_run_end = CASE WHEN EXCLUDED.last_run_start IS NULL THEN analytics_users.last_run_end
                                    ELSE EXCLUDED.last_run_end END,
                materials_day = GREATEST(analytics_users.materials_day, EXCLUDED.materials_day),
                materials_day_count = CASE
                    WHEN EXCLUDED.materials_day = analytics_users.materials_day
                    THEN analytics_users.materials_day_count + EXCLUDED.materials_day_count
                    WHEN EXCLUDED.materials_day > analytics_users.materials_day OR analytics_users.materials_day IS NULL
                    THEN EXCLUDED.materials_day_count
                    ELSE analytics_users.materials_day_count END
        )
        SELECT 1
        """
}

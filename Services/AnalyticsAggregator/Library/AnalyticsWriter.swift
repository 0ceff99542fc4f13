import Contracts
import Postgres

/// The statements that write the read model: one multi-row statement per table, rows
/// bound as arrays and sorted by key (a stable lock order between concurrent writers).
enum AnalyticsWriter {
    /// `epoch ms` → timestamptz, exactly.
    static let fromMillis = "TIMESTAMPTZ 'epoch' + INTERVAL '1 millisecond' *"
    /// Day number → date.
    static let fromDay = "DATE '1970-01-01' +"
    /// Stands for "no value" in a bigint array of optional timestamps.
    static let noTime = Int64.min

    /// Inserts the events into the log; returns the ids that were not there yet.
    static func logEvents(_ events: [ReadingEventRecord], in connection: PostgresConnection) async throws -> Set<String> {
        let rows = try await connection.query("""
            INSERT INTO analytics_events (event_id, user_id, client_session_id, material_id, event_type, active_seconds,
                                          client_ts, tz_offset_minutes, local_day, received_at)
            SELECT e.id, e.u, e.s, e.m, e.t, e.a, \(fromMillis) e.ts, e.tz, \(fromDay) e.d, \(fromMillis) e.r
            FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::int[], $7::bigint[], $8::int[],
                        $9::int[], $10::bigint[]) AS e(id, u, s, m, t, a, ts, tz, d, r)
            ON CONFLICT (event_id) DO NOTHING
            RETURNING event_id
            """, [
                events.map(\.eventId), events.map(\.userId), events.map(\.clientSessionId), events.map(\.materialId),
                events.map(\.eventType.rawValue), events.map(\.activeSecondsDelta),
                events.map { AnalyticsBatch.milliseconds($0.clientTimestamp) }, events.map(\.clientTimezoneOffsetMinutes),
                events.map { LocalDay(instant: $0.clientTimestamp, offsetMinutes: $0.clientTimezoneOffsetMinutes).number },
                events.map { AnalyticsBatch.milliseconds($0.receivedAt) },
            ])
        var ids = Set<String>()
        for row in rows { ids.insert(try row.decode(String.self, "event_id")) }
        return ids
    }

    /// Folds a batch of new events into every aggregate.
    static func apply(_ batch: AnalyticsBatch, in connection: PostgresConnection) async throws {
        let days = batch.days.sorted { $0.key < $1.key }
        try await connection.execute("""
            INSERT INTO analytics_daily (user_id, day, active_seconds, events)
            SELECT t.u, \(fromDay) t.d, t.a, t.n FROM unnest($1::text[], $2::int[], $3::bigint[], $4::int[]) AS t(u, d, a, n)
            ON CONFLICT (user_id, day) DO UPDATE
                SET active_seconds = analytics_daily.active_seconds + EXCLUDED.active_seconds,
                    events = analytics_daily.events + EXCLUDED.events
            """, [days.map(\.key.user), days.map(\.key.day.number), days.map { Int64($0.value.activeSeconds) }, days.map(\.value.events)])

        let materials = batch.dayMaterials.sorted { $0.key < $1.key }
        try await connection.execute("""
            INSERT INTO analytics_day_materials (user_id, day, material_id, completed)
            SELECT t.u, \(fromDay) t.d, t.m, t.c <> 0 FROM unnest($1::text[], $2::int[], $3::text[], $4::int[]) AS t(u, d, m, c)
            ON CONFLICT (user_id, day, material_id) DO UPDATE
                SET completed = analytics_day_materials.completed OR EXCLUDED.completed
            """, [materials.map(\.key.user), materials.map(\.key.day.number), materials.map(\.key.item), materials.map { $0.value ? 1 : 0 }])

        let daySessions = batch.daySessions.sorted()
        try await connection.execute("""
            INSERT INTO analytics_day_sessions (user_id, day, client_session_id)
            SELECT t.u, \(fromDay) t.d, t.s FROM unnest($1::text[], $2::int[], $3::text[]) AS t(u, d, s)
            ON CONFLICT DO NOTHING
            """, [daySessions.map(\.user), daySessions.map(\.day.number), daySessions.map(\.item)])

        if !batch.completions.isEmpty {
            let completions = batch.completions.sorted { $0.key < $1.key }
            try await connection.execute("""
                INSERT INTO analytics_completions (user_id, material_id, first_completed_at)
                SELECT t.u, t.m, \(fromMillis) t.at FROM unnest($1::text[], $2::text[], $3::bigint[]) AS t(u, m, at)
                ON CONFLICT (user_id, material_id) DO UPDATE
                    SET first_completed_at = LEAST(analytics_completions.first_completed_at, EXCLUDED.first_completed_at)
                """, [completions.map(\.key.user), completions.map(\.key.item), completions.map(\.value)])
        }

        try await applySessions(batch, in: connection)

        let users = batch.users.sorted { $0.key < $1.key }
        try await connection.execute("""
            INSERT INTO analytics_users (user_id, latest_event_at, tz_offset_minutes)
            SELECT t.u, \(fromMillis) t.at, t.tz FROM unnest($1::text[], $2::bigint[], $3::int[]) AS t(u, at, tz)
            ON CONFLICT (user_id) DO UPDATE SET
                tz_offset_minutes = CASE
                    WHEN (EXCLUDED.latest_event_at, EXCLUDED.tz_offset_minutes)
                         > (analytics_users.latest_event_at, analytics_users.tz_offset_minutes)
                    THEN EXCLUDED.tz_offset_minutes ELSE analytics_users.tz_offset_minutes END,
                latest_event_at = GREATEST(analytics_users.latest_event_at, EXCLUDED.latest_event_at)
            """, [users.map(\.key), users.map(\.value.at), users.map(\.value.offsetMinutes)])
    }

    /// Sessions: earliest start (its material), latest event, latest `closed`, summed
    /// seconds and events, completed if any event completed.
    static func applySessions(_ batch: AnalyticsBatch, in connection: PostgresConnection) async throws {
        let sessions = batch.sessions.sorted { $0.key < $1.key }
        try await connection.execute("""
            INSERT INTO analytics_sessions (user_id, client_session_id, material_id, started_at, last_event_at, closed_at,
                                            active_seconds, completed, events)
            SELECT t.u, t.s, t.m, \(fromMillis) t.st, \(fromMillis) t.la, \(fromMillis) NULLIF(t.cl, $10::bigint),
                   t.a, t.c <> 0, t.n
            FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[],
                        $8::int[], $9::int[]) AS t(u, s, m, st, la, cl, a, c, n)
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
            """, [
                sessions.map(\.key.user), sessions.map(\.key.item), sessions.map(\.value.materialID),
                sessions.map(\.value.startedAt), sessions.map(\.value.lastEventAt), sessions.map { $0.value.closedAt ?? noTime },
                sessions.map { Int64($0.value.activeSeconds) }, sessions.map { $0.value.completed ? 1 : 0 },
                sessions.map(\.value.events), noTime,
            ])
    }
}

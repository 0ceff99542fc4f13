/// The notifier's SQL, in one place.
enum RealtimeSQL {
    /// Reserves `$2[i]` sequences for channel `$1[i]`; returns each channel's new last sequence.
    static let reserve = """
        INSERT INTO realtime_channels AS c (channel, last_seq)
        SELECT * FROM unnest($1::text[], $2::bigint[])
        ON CONFLICT (channel) DO UPDATE SET last_seq = c.last_seq + EXCLUDED.last_seq, updated_at = now()
        RETURNING channel, last_seq
        """

    /// Which of the drafts (`$1` channels, `$2` events, `$3` payloads) the channels' history
    /// already holds: their 1-based positions.
    static let sequencedAlready = """
        SELECT d.i FROM unnest($1::text[], $2::text[], $3::jsonb[]) WITH ORDINALITY AS d(channel, event, payload, i)
        WHERE EXISTS (SELECT 1 FROM realtime_history h WHERE h.channel = d.channel AND h.event = d.event AND h.payload = d.payload)
        """

    static let insertHistory = """
        INSERT INTO realtime_history (channel, seq, event, payload, created_at, source_topic, source_partition, source_offset)
        SELECT * FROM unnest($1::text[], $2::bigint[], $3::text[], $4::jsonb[], $5::timestamptz[], $6::text[], $7::int[], $8::bigint[])
        """

    /// Trims published rows of channels `$1` beyond the last `$2` events (an index range
    /// scan per channel) and records how far each channel was trimmed.
    static let trimByCount = trim(where: "h.seq <= c.last_seq - $2::bigint")

    /// Trims published rows of channels `$1` older than `$2` seconds.
    static let trimByAge = trim(where: "h.created_at < now() - make_interval(secs => $2::double precision)")

    private static func trim(where condition: String) -> String {
        """
        WITH gone AS (
            DELETE FROM realtime_history h
            USING realtime_channels c
            WHERE c.channel = ANY($1::text[]) AND h.channel = c.channel AND h.published AND \(condition)
            RETURNING h.channel, h.seq, h.created_at
        ), agg AS (
            SELECT channel, max(seq) AS seq, max(created_at) AS at FROM gone GROUP BY channel
        )
        UPDATE realtime_channels c SET trimmed_seq = GREATEST(c.trimmed_seq, agg.seq),
                                       trimmed_at = GREATEST(c.trimmed_at, agg.at)
        FROM agg WHERE c.channel = agg.channel
        """
    }

    /// Channels with rows past the age bound (for the periodic trim).
    static let expiredChannels = """
        SELECT DISTINCT channel FROM realtime_history
        WHERE published AND created_at < now() - make_interval(secs => $1::double precision)
        LIMIT 1000
        """

    static let markPublished = """
        UPDATE realtime_history h SET published = true
        FROM unnest($1::text[], $2::bigint[]) AS p(channel, seq)
        WHERE h.channel = p.channel AND h.seq = p.seq AND NOT h.published
        """

    /// Unpublished rows older than `$1` seconds (their after-commit publish failed or the process died).
    static let unpublished = """
        SELECT channel, seq, event, payload, created_at FROM realtime_history
        WHERE NOT published AND created_at < now() - make_interval(secs => $1::double precision)
        ORDER BY created_at, channel, seq LIMIT $2::bigint
        """

    static let lastSeqs = "SELECT channel, last_seq FROM realtime_channels WHERE channel = ANY($1::text[])"

    static let channelState = """
        SELECT last_seq, trimmed_seq, trimmed_at FROM realtime_channels WHERE channel = $1
        """

    /// History of `$1` after sequence `$2` up to `$3`, in order, at most `$4` rows.
    static let eventsAfter = """
        SELECT channel, seq, event, payload, created_at FROM realtime_history
        WHERE channel = $1 AND seq > $2 AND seq <= $3 ORDER BY seq LIMIT $4
        """

    /// The first sequence of `$1` created after `$2` (epoch ms).
    static let firstSeqSince = """
        SELECT min(seq) AS seq FROM realtime_history
        WHERE channel = $1 AND created_at > to_timestamp($2::double precision / 1000)
        """

    /// Owner and (when known, `$3[i] <> ''`) visibility of rooms; one row per room.
    static let upsertRoom = """
        INSERT INTO realtime_rooms AS r (room_id, owner_user_id, visibility)
        SELECT room_id, owner, NULLIF(visibility, '') FROM unnest($1::text[], $2::text[], $3::text[]) AS t(room_id, owner, visibility)
        ON CONFLICT (room_id) DO UPDATE SET owner_user_id = EXCLUDED.owner_user_id,
            visibility = COALESCE(EXCLUDED.visibility, r.visibility), updated_at = now()
        """

    static let room = "SELECT owner_user_id, visibility FROM realtime_rooms WHERE room_id = $1"

}

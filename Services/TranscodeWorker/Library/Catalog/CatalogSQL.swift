import Postgres

/// SQL of the catalog read model, over a set of `CatalogTables` (the live ones or a rebuild's
/// shadow copies).
enum CatalogSQL {
    /// Merges one `CatalogVersionDelta` per version. Request fields change only for a newer
    /// request (an upload-init's stand in while there is none); status fields only for a status
    /// at least as new as the stored one (`status_at`: a status delivered again after newer ones
    /// changes nothing); `queued_ats` is the union of the `queued` statuses' instants (the first
    /// attempt and each retry publish one, so a repeat is not another attempt). The status is the
    /// worker's newest one; without one `queued` once a request was seen, else `abandoned` once
    /// that was announced, else `uploading` — the same whatever order the three topics' records
    /// come in. The city label goes with the title (a request's label, none included, outranks an
    /// upload-init's; `$22`, "" = none), the redactions with the request (`$23`, a JSON array of
    /// `Redaction`; "" = no request in the batch).
    static func upsertVersions(_ t: CatalogTables) -> String {
        let newer = "(EXCLUDED.status_at IS NOT NULL AND (v.status_at IS NULL OR EXCLUDED.status_at >= v.status_at))"
        return """
        INSERT INTO \(t.versions) AS v (version_id, room_id, owner_id, title, tags, visibility, location_city, redactions,
            requested_at, status, stage, error_code, reason, quality_grade, manifest_key, thumbnail_key, glb_keys, queued_ats,
            status_at, finished_at, created_at, updated_at)
        SELECT vid, rid, oid,
               CASE WHEN req_at <> '' OR tags <> '' THEN title END,
               CASE WHEN tags <> '' THEN ARRAY(SELECT jsonb_array_elements_text(tags::jsonb)) END,
               NULLIF(vis, ''), CASE WHEN req_at <> '' OR tags <> '' THEN NULLIF(city, '') END, NULLIF(redactions, '')::jsonb,
               NULLIF(req_at, '')::timestamptz,
               COALESCE(NULLIF(status, ''), CASE WHEN req_at = '' AND upload <> '' THEN upload ELSE 'queued' END), NULLIF(stage, ''), NULLIF(code, ''), NULLIF(reason, ''),
               NULLIF(grade, ''), NULLIF(manifest, ''), NULLIF(thumb, ''),
               CASE WHEN glb <> '' THEN ARRAY(SELECT jsonb_array_elements_text(glb::jsonb)) END,
               CASE WHEN queued = '' THEN '{}' ELSE string_to_array(queued, ',')::timestamptz[] END, NULLIF(status_at, '')::timestamptz, NULLIF(finished, '')::timestamptz,
               first_at::timestamptz, last_at::timestamptz
        FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
                    $9::text[], $10::text[], $11::text[], $12::text[], $13::text[], $14::text[], $15::text[], $16::text[],
                    $17::text[], $18::text[], $19::text[], $20::text[], $21::text[], $22::text[], $23::text[])
             AS d(vid, rid, oid, title, tags, vis, req_at, status, stage, code, reason, grade, manifest, thumb, glb, queued,
                  status_at, finished, first_at, last_at, upload, city, redactions)
        ON CONFLICT (version_id) DO UPDATE SET
            room_id = EXCLUDED.room_id,
            owner_id = EXCLUDED.owner_id,
            title = CASE WHEN EXCLUDED.requested_at >= v.requested_at OR v.requested_at IS NULL
                         THEN COALESCE(EXCLUDED.title, v.title) ELSE v.title END,
            tags = CASE WHEN EXCLUDED.requested_at >= v.requested_at OR v.requested_at IS NULL
                        THEN COALESCE(EXCLUDED.tags, v.tags) ELSE v.tags END,
            visibility = CASE WHEN EXCLUDED.requested_at IS NOT NULL
                                   AND (v.requested_at IS NULL OR EXCLUDED.requested_at >= v.requested_at)
                              THEN EXCLUDED.visibility
                              ELSE COALESCE(v.visibility, EXCLUDED.visibility) END,
            location_city = CASE WHEN EXCLUDED.title IS NOT NULL AND (EXCLUDED.requested_at >= v.requested_at OR v.requested_at IS NULL)
                                 THEN EXCLUDED.location_city ELSE v.location_city END,
            redactions = CASE WHEN EXCLUDED.requested_at IS NOT NULL
                                   AND (v.requested_at IS NULL OR EXCLUDED.requested_at >= v.requested_at)
                              THEN EXCLUDED.redactions ELSE v.redactions END,
            requested_at = GREATEST(v.requested_at, EXCLUDED.requested_at),
            status = CASE WHEN \(newer) THEN EXCLUDED.status
                          WHEN v.status_at IS NOT NULL THEN v.status
                          WHEN EXCLUDED.requested_at IS NOT NULL OR v.requested_at IS NOT NULL THEN 'queued'
                          WHEN 'abandoned' IN (EXCLUDED.status, v.status) THEN 'abandoned'
                          ELSE 'uploading' END,
            \(UpsertSQL.taking(["stage", "error_code", "reason", "quality_grade", "manifest_key", "thumbnail_key", "glb_keys",
                               "finished_at"], when: newer, existing: "v"))
            status_at = GREATEST(EXCLUDED.status_at, v.status_at),
            queued_ats = ARRAY(SELECT DISTINCT a FROM unnest(v.queued_ats || EXCLUDED.queued_ats) AS a ORDER BY a),
            created_at = LEAST(v.created_at, EXCLUDED.created_at),
            updated_at = GREATEST(v.updated_at, EXCLUDED.updated_at)
        """
    }

    /// Recomputes the rooms of `$1` from their versions (abandoned ones left out; a room with
    /// no other version is deleted): the newest request's title, tags,
    /// visibility and city label; the current version (the latest ready one) with its grade, thumbnail and
    /// manifest; the latest version's status and group; and the feed's ranking key — the
    /// creation time in microseconds, `$2` µs earlier for a C room (a recency score that halves
    /// every `$2` µs, weighted × 0.5, orders exactly like this shifted time, and the key does not
    /// change as time passes, so cursors stay stable), zero-padded, then the room id (unique).
    static func refreshRooms(_ t: CatalogTables) -> String {
        """
        WITH gone AS (
            DELETE FROM \(t.rooms) d WHERE d.room_id = ANY($1::text[])
               AND NOT EXISTS (SELECT 1 FROM \(t.versions) x WHERE x.room_id = d.room_id AND x.status <> 'abandoned'))
        INSERT INTO \(t.rooms) AS r (room_id, owner_id, title, tags, visibility, location_city, created_at, updated_at,
            current_version_id, quality_grade, thumbnail_key, manifest_key, latest_version_id, latest_status, state, feed_rank)
        SELECT a.room_id, meta.owner_id, COALESCE(meta.title, ''), COALESCE(meta.tags, '{}'), COALESCE(meta.visibility, 'private'),
               meta.location_city, span.created_at, span.updated_at, cur.version_id, cur.quality_grade, cur.thumbnail_key, cur.manifest_key,
               latest.version_id, latest.status,
               CASE latest.status WHEN 'ready' THEN 'published' WHEN 'failed' THEN 'failed' ELSE 'in_progress' END,
               lpad((floor(extract(epoch FROM span.created_at) * 1000000)::bigint
                     - CASE WHEN cur.quality_grade = 'C' THEN $2::bigint ELSE 0 END)::text, 17, '0') || '.' || a.room_id
        FROM unnest($1::text[]) AS a(room_id)
        CROSS JOIN LATERAL (
            SELECT owner_id, title, tags, visibility, location_city FROM \(t.versions)
            WHERE room_id = a.room_id AND status <> 'abandoned'
            ORDER BY requested_at DESC NULLS LAST, version_id DESC LIMIT 1) meta
        CROSS JOIN LATERAL (
            SELECT min(created_at) AS created_at, max(updated_at) AS updated_at FROM \(t.versions)
            WHERE room_id = a.room_id AND status <> 'abandoned') span
        CROSS JOIN LATERAL (
            SELECT version_id, status FROM \(t.versions) WHERE room_id = a.room_id AND status <> 'abandoned'
            ORDER BY created_at DESC, version_id DESC LIMIT 1) latest
        LEFT JOIN LATERAL (
            SELECT version_id, quality_grade, thumbnail_key, manifest_key FROM \(t.versions)
            WHERE room_id = a.room_id AND status = 'ready'
            ORDER BY finished_at DESC NULLS LAST, version_id DESC LIMIT 1) cur ON true
        ON CONFLICT (room_id) DO UPDATE SET
            owner_id = EXCLUDED.owner_id, title = EXCLUDED.title, tags = EXCLUDED.tags, visibility = EXCLUDED.visibility,
            location_city = EXCLUDED.location_city,
            created_at = EXCLUDED.created_at, updated_at = EXCLUDED.updated_at,
            current_version_id = EXCLUDED.current_version_id, quality_grade = EXCLUDED.quality_grade,
            thumbnail_key = EXCLUDED.thumbnail_key, manifest_key = EXCLUDED.manifest_key,
            latest_version_id = EXCLUDED.latest_version_id, latest_status = EXCLUDED.latest_status,
            state = EXCLUDED.state, feed_rank = EXCLUDED.feed_rank
        """
    }
}

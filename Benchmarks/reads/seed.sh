# The read benchmarks' shared parts (sourced by bench.sh and profile.sh): a service started and
# waited for (reads_start), and the seed (reads_seed): USERS users with MATERIALS
# reading_progress rows each and, for users 1–100, a year of analytics_daily plus sessions,
# completions and day materials. Needs PSQL, DATABASE_URL, USERS and MATERIALS set. The streak
# settings are left empty, so the aggregator, when it next starts, computes the seeded users'
# streak runs (and their summary rows) from the daily rows, and applies the months' migration
# (the heatmap's analytics_months, filled from the daily rows) again.
reads_seed() {
    # USERS × MATERIALS rows, every 4th in progress.
    "$PSQL" -q "$DATABASE_URL" <<SQL
    INSERT INTO reading_progress (user_id, material_id, status, last_position, position_percent, progress_percent,
        total_active_seconds, first_read_at, last_read_at, last_session_id, reading_target_type, latest_ts, latest_seq, latest_event_id)
    SELECT 'user-' || u, 'material-' || m, CASE WHEN m % 4 = 0 THEN 'in_progress' ELSE 'completed' END,
           '{"type":"pdf","page":12,"totalPages":40}'::jsonb, 30.0, 30.0, 600,
           now() - interval '2 days', now() - (m || ' minutes')::interval, 'session-' || m, 'document', now(), m, 'event-' || u || '-' || m
    FROM generate_series(1, $USERS) u, generate_series(1, $MATERIALS) m;
    -- Analytics of users 1–100: a year of daily activity, sessions, completions.
    INSERT INTO analytics_users (user_id, latest_event_at, tz_offset_minutes)
    SELECT 'user-' || u, now(), 480 FROM generate_series(1, $USERS) u;
    INSERT INTO analytics_daily (user_id, day, active_seconds, events)
    SELECT 'user-' || u, current_date - d, (d * 37) % 4000, 10 FROM generate_series(1, 100) u, generate_series(0, 364) d;
    INSERT INTO analytics_day_materials (user_id, day, material_id, completed)
    SELECT 'user-' || u, current_date - d, 'material-' || m, m = 1 FROM generate_series(1, 100) u, generate_series(0, 29) d, generate_series(1, 3) m;
    INSERT INTO analytics_completions (user_id, material_id, first_completed_at)
    SELECT 'user-' || u, 'material-' || m, now() - (m || ' days')::interval FROM generate_series(1, 100) u, generate_series(1, 20) m;
    INSERT INTO analytics_sessions (user_id, client_session_id, material_id, started_at, last_event_at, active_seconds, completed, events)
    SELECT 'user-' || u, 'session-' || s, 'material-' || (s % 20), now() - (s || ' hours')::interval,
           now() - (s || ' hours')::interval + interval '20 minutes', 1200, s % 7 = 0, 40
    FROM generate_series(1, 100) u, generate_series(1, 200) s;
    DELETE FROM analytics_streak_settings;
    -- The heatmap's months (migration 470) are filled from the daily rows by their migration:
    -- forgotten here, so the aggregator's restart applies it again over the seeded days.
    DROP TABLE IF EXISTS analytics_months;
    DELETE FROM schema_migrations WHERE version = 470;
SQL
}

# Starts service $1 (from $BIN) on port $2, in the background (its pid appended to PIDS, its log
# in $WORK), and waits until its /healthz answers; exits when it dies or does not come up.
reads_start() {  # name port
    HTTP_PORT="$2" "$BIN/$1" >"$WORK/$1.log" 2>&1 &
    PIDS+=($!)
    for _ in $(seq 1 200); do
        curl -fs "http://127.0.0.1:$2/healthz" >/dev/null 2>&1 && return 0
        kill -0 "${PIDS[-1]}" 2>/dev/null || { cat "$WORK/$1.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "$1 did not start" >&2; exit 1
}

# A throwaway PostgreSQL and the scripts' working folder, both removed at exit with every service
# in PIDS (the cluster has its own directory: it runs as the postgres user); exports what the
# services read. $1 names the working folder.
reads_database() {  # name
    WORK="$(mktemp -d "/tmp/reads-$1.XXXX")"
    PGDIR="$(mktemp -d /tmp/pg.XXXX)"
    PIDS=()
    trap reads_cleanup EXIT
    PG_PORT=$(free_port)
    export DATABASE_URL=$(pg_start_throwaway "$PGDIR" "$PG_PORT")
    PSQL="$(pg_bindir)/psql"
    export JWT_SECRET="reads-bench-secret" KAFKA_BROKERS="127.0.0.1:$(free_port)" LOG_LEVEL=error HTTP_HOST=127.0.0.1
}

reads_cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    pg_stop_throwaway "$PGDIR"
    rm -rf "$WORK"
}

# A token of user-7 signed with JWT_SECRET, valid for a day.
reads_token() {
    python3 - "$JWT_SECRET" <<'PY'
import base64, hashlib, hmac, json, sys, time
b = lambda raw: base64.urlsafe_b64encode(raw).rstrip(b"=").decode()
head = b(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
body = b(json.dumps({"sub": "user-7", "iat": int(time.time()), "exp": int(time.time()) + 86400}).encode())
sig = b(hmac.new(sys.argv[1].encode(), f"{head}.{body}".encode(), hashlib.sha256).digest())
print(f"{head}.{body}.{sig}")
PY
}

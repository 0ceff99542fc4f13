#!/usr/bin/env bash
# PostgreSQL's CPU per execution of the analytics read statements, former (computing today, the
# streak, the materials rule and the instants in SQL) against current (plain columns), measured
# alternately on one seeded database (Benchmarks/reads/seed.sh's analytics rows, user-7, tz
# absent): per statement and round, `pgbench -M prepared -c1 -t N` (a generic plan after the
# fifth execution, as the service's prepared statements) and the CPU of the cluster's processes
# over it (/proc utime + stime, the exited backend's through the postmaster's cutime + cstime).
# The former statements take tz as a literal NULL (pgbench variables cannot be NULL), which lets
# the planner fold their COALESCE away: if anything, their cost is understated.
# Usage: docs/profiles/reads-statements/statements.sh [ROUNDS] [N]
set -euo pipefail
cd "$(dirname "$0")/../../.."
source deploy/lib/common.sh
ROUNDS="${1:-3}"; N="${2:-20000}"
DIR="$(mktemp -d /tmp/statements.XXXX)"; trap 'pg_stop_throwaway "$DIR"' EXIT
URL=$(pg_start_throwaway "$DIR" "$(free_port)")
PSQL="$(pg_bindir)/psql"
# The analytics tables as the service creates them: its migrations' SQL through the CLI would
# need a build; the columns the statements read are enough.
"$PSQL" -q -v ON_ERROR_STOP=1 "$URL" <<'SQL'
CREATE TABLE analytics_users (user_id text PRIMARY KEY, latest_event_at timestamptz NOT NULL, tz_offset_minutes integer NOT NULL,
    materials_completed integer NOT NULL DEFAULT 0, last_active_day date, longest_streak_days integer NOT NULL DEFAULT 0,
    last_run_start date, last_run_end date, materials_day date, materials_day_count integer NOT NULL DEFAULT 0);
CREATE TABLE analytics_daily (user_id text NOT NULL, day date NOT NULL, active_seconds bigint NOT NULL DEFAULT 0,
    events integer NOT NULL DEFAULT 0, PRIMARY KEY (user_id, day));
CREATE TABLE analytics_day_materials (user_id text NOT NULL, day date NOT NULL, material_id text NOT NULL,
    completed boolean NOT NULL DEFAULT false, PRIMARY KEY (user_id, day, material_id));
CREATE TABLE analytics_streak_runs (user_id text NOT NULL, start_day date NOT NULL, end_day date NOT NULL, PRIMARY KEY (user_id, start_day));
CREATE TABLE analytics_months (user_id text NOT NULL, month date NOT NULL, seconds bigint[] NOT NULL, PRIMARY KEY (user_id, month));
CREATE TABLE analytics_sessions (user_id text NOT NULL, client_session_id text NOT NULL, material_id text NOT NULL,
    started_at timestamptz NOT NULL, last_event_at timestamptz NOT NULL, closed_at timestamptz, active_seconds bigint NOT NULL DEFAULT 0,
    completed boolean NOT NULL DEFAULT false, events integer NOT NULL DEFAULT 0, PRIMARY KEY (user_id, client_session_id));
CREATE INDEX analytics_sessions_history ON analytics_sessions (user_id, started_at DESC, client_session_id DESC);
-- Benchmarks/reads/seed.sh's analytics rows (users 1–100)
INSERT INTO analytics_daily SELECT 'user-' || u, current_date - d, (d * 37) % 4000, 10 FROM generate_series(1, 100) u, generate_series(0, 364) d;
INSERT INTO analytics_day_materials SELECT 'user-' || u, current_date - d, 'material-' || m, m = 1
    FROM generate_series(1, 100) u, generate_series(0, 29) d, generate_series(1, 3) m;
INSERT INTO analytics_sessions (user_id, client_session_id, material_id, started_at, last_event_at, active_seconds, completed, events)
SELECT 'user-' || u, 'session-' || s, 'material-' || (s % 20), date_trunc('milliseconds', now() - (s || ' hours')::interval),
       date_trunc('milliseconds', now() - (s || ' hours')::interval + interval '20 minutes'), 1200, s % 7 = 0, 40
FROM generate_series(1, 100) u, generate_series(1, 200) s;
-- the months and the summary rows as the aggregator keeps them (threshold 60 s)
INSERT INTO analytics_months SELECT g.user_id, g.month,
       ARRAY(SELECT n.v FROM generate_series(1, 31) AS i LEFT JOIN unnest(g.ps, g.vs) AS n(p, v) ON n.p = i ORDER BY i)
FROM (SELECT user_id, day - (extract(day FROM day)::int - 1) AS month, array_agg(extract(day FROM day)::int) AS ps,
             array_agg(active_seconds) AS vs FROM analytics_daily GROUP BY 1, 2) AS g;
INSERT INTO analytics_streak_runs SELECT user_id, min(day), max(day)
FROM (SELECT user_id, day, day - (row_number() OVER (PARTITION BY user_id ORDER BY day))::int AS island
      FROM analytics_daily WHERE active_seconds >= 60) AS q GROUP BY user_id, island;
INSERT INTO analytics_users (user_id, latest_event_at, tz_offset_minutes, materials_completed, last_active_day, longest_streak_days,
                             last_run_start, last_run_end, materials_day, materials_day_count)
SELECT 'user-' || u, now(), 480, 20, current_date,
       COALESCE((SELECT max(end_day - start_day) + 1 FROM analytics_streak_runs r WHERE r.user_id = 'user-' || u), 0),
       (SELECT max(start_day) FROM analytics_streak_runs r WHERE r.user_id = 'user-' || u),
       (SELECT end_day FROM analytics_streak_runs r WHERE r.user_id = 'user-' || u ORDER BY start_day DESC LIMIT 1),
       current_date, 3
FROM generate_series(1, 1000) u;
ANALYZE;
SQL
D="DATE '1970-01-01' +"
TODAY="floor((:now::bigint + 60 * COALESCE(NULL::int, (SELECT tz_offset_minutes FROM analytics_users WHERE user_id = :user), 0)) / 86400.0)::int"
VARS=(-D now="$(date +%s)" -D user=user-7 -D lo="$(date -u -d '-1 day -6 days' +%F)" -D hi="$(date -u -d '+1 day' +%F)"
      -D mlo="$(date -u -d "$(date -u -d '-1 day -364 days' +%Y-%m-01)" +%F)")
declare -A SQL
SQL[summary.former]="WITH t AS MATERIALIZED (
    SELECT today,
           CASE WHEN u.materials_day IS NULL OR u.materials_day < $D today THEN 0
                WHEN u.materials_day = $D today THEN u.materials_day_count
                ELSE (SELECT count(*) FROM analytics_day_materials WHERE user_id = :user AND day = $D today) END AS read,
           COALESCE(u.materials_completed, 0) AS completed, u.last_active_day - DATE '1970-01-01' AS last_active,
           CASE WHEN u.last_run_start IS NULL THEN 0
                WHEN u.last_run_start <= $D today THEN
                    CASE WHEN u.last_run_end >= $D (today - 1) THEN LEAST(u.last_run_end, $D today) - u.last_run_start + 1 ELSE 0 END
                ELSE (SELECT CASE WHEN end_day >= $D (today - 1) THEN LEAST(end_day, $D today) - start_day + 1 ELSE 0 END
                      FROM analytics_streak_runs WHERE user_id = :user AND start_day <= $D today ORDER BY start_day DESC LIMIT 1) END AS current,
           COALESCE(u.longest_streak_days, 0) AS longest
    FROM (SELECT floor((:now::bigint + 60 * COALESCE(NULL::int, u.tz_offset_minutes, 0)) / 86400.0)::int AS today, u.*
          FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = :user) AS u)
SELECT t.today, t.read, t.completed, t.last_active, COALESCE(t.current, 0), t.longest, d.day - DATE '1970-01-01' AS n, d.active_seconds
FROM t LEFT JOIN analytics_daily d ON d.user_id = :user AND d.day BETWEEN $D (t.today - 6) AND $D t.today ORDER BY d.day;"
SQL[summary.current]="SELECT u.tz_offset_minutes, u.materials_completed, u.last_active_day, u.longest_streak_days,
       u.last_run_start, u.last_run_end, u.materials_day, u.materials_day_count, r.day, r.active_seconds
FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = :user
LEFT JOIN analytics_daily r ON r.user_id = :user AND r.day BETWEEN :lo::date AND :hi::date;"
SQL[trend.former]="WITH t AS MATERIALIZED (SELECT $TODAY AS today)
SELECT t.today, d.day - DATE '1970-01-01' AS n, d.active_seconds
FROM t LEFT JOIN analytics_daily d ON d.user_id = :user AND d.day BETWEEN DATE '1970-01-01' + (t.today - 7 + 1) AND DATE '1970-01-01' + t.today
ORDER BY d.day;"
SQL[trend.current]="SELECT u.tz_offset_minutes, r.day, r.active_seconds
FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = :user
LEFT JOIN analytics_daily r ON r.user_id = :user AND r.day BETWEEN :lo::date AND :hi::date;"
SQL[heatmap.former]="WITH t AS MATERIALIZED (SELECT today, today - 365 + 1 AS first FROM (SELECT $TODAY AS today) AS s)
SELECT t.today, t.first, m.month - DATE '1970-01-01' AS n, array_replace(m.seconds, NULL, 0)
FROM t LEFT JOIN analytics_months m ON m.user_id = :user
 AND m.month BETWEEN $D t.first - (extract(day FROM $D t.first)::int - 1) AND $D t.today ORDER BY m.month;"
SQL[heatmap.current]="SELECT u.tz_offset_minutes, r.month, r.seconds
FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = :user
LEFT JOIN analytics_months r ON r.user_id = :user AND r.month BETWEEN :mlo::date AND :hi::date;"
SQL[history.former]="SELECT client_session_id, material_id, active_seconds, completed,
       (extract(epoch FROM started_at) * 1000)::bigint AS started_ms,
       (extract(epoch FROM COALESCE(closed_at, last_event_at)) * 1000)::bigint AS ended_ms
FROM analytics_sessions WHERE user_id = :user ORDER BY started_at DESC, client_session_id DESC LIMIT 21;"
SQL[history.current]="SELECT client_session_id, material_id, active_seconds, completed, started_at, closed_at, last_event_at
FROM analytics_sessions WHERE user_id = :user ORDER BY started_at DESC, client_session_id DESC LIMIT 21;"
PM=$(head -1 "$DIR/data/postmaster.pid")
ticks() {  # the cluster's CPU ticks: live processes, and the reaped ones through the postmaster
    local t p; t=$(awk '{ print $16 + $17 }' "/proc/$PM/stat")
    for p in $PM $(pgrep -P "$PM"); do t=$(( t + $(awk '{ print $14 + $15 }' "/proc/$p/stat" 2>/dev/null || echo 0) )); done
    echo "$t"
}
TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))
echo "# $(uptime)"
printf '%-6s %-10s %14s %14s %7s\n' round statement "former µs" "current µs" change
for round in $(seq 1 "$ROUNDS"); do
    for statement in summary trend heatmap history; do
        declare -A US
        for version in former current; do
            printf '%s\n' "${SQL[$statement.$version]}" >"$DIR/$statement.$version.sql"
            t0=$(ticks)
            pgbench -n -M prepared -c1 -t "$N" "${VARS[@]}" -f "$DIR/$statement.$version.sql" "$URL" >"$DIR/pgbench.out" 2>&1 \
                || { cat "$DIR/pgbench.out" >&2; exit 1; }
            sleep 0.3
            t1=$(ticks)
            US[$version]=$(awk -v a="$t0" -v b="$t1" -v n="$N" -v k="$TICK_US" 'BEGIN { printf "%.1f", (b - a) * k / n }')
        done
        printf '%-6s %-10s %14s %14s %6s%%\n' "$round" "$statement" "${US[former]}" "${US[current]}" \
            "$(awk -v a="${US[former]}" -v b="${US[current]}" 'BEGIN { printf "%+.0f", (b - a) * 100 / a }')"
    done
done
echo "# $(uptime)"

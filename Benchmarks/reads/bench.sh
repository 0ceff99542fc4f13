#!/usr/bin/env bash
# Benchmark (issue #14, reads): the read endpoints of progress-projector and analytics-aggregator
# next to `/healthz` (the HTTP layer alone) and pgbench running the same point query, in one run.
# Release builds of both services against a throwaway PostgreSQL on loopback (KAFKA_BROKERS points
# at a closed port: the consumers idle, the read path is what is measured). Seeds USERS users with
# MATERIALS reading_progress rows each, then per endpoint `wrk` with CONNECTIONS keep-alive
# connections for DURATION seconds (one token, one user), then pgbench (prepared, 16 clients) of
# each endpoint's own statements, and the ceiling the two together give on these shared cores
# (1 / (1/healthz + 1/pgbench)). Prints req/s, p50/p99 and errors. Then each GET endpoint with
# 1,000 keep-alive connections paced (wrk's per-request delay, random around the mean) to half the
# rate it saturated at, p50/p99 of that; then every endpoint with 5,000 connections (errors).
# Needs: wrk (apt-get install -y wrk; in deploy/lib/common.sh), PostgreSQL with pgbench, python3.
# Usage: Benchmarks/reads/bench.sh [DURATION] [CONNECTIONS]   (defaults 10, 100; SKIP_MANY=1 skips the
# 1,000- and 5,000-connection runs, SKIP_BUILD=1 the build, BENCH_BIN=dir runs the binaries in dir)
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/lib/common.sh
source Benchmarks/reads/seed.sh
DURATION="${1:-10}"
CONNECTIONS="${2:-100}"
USERS="${USERS:-1000}"
MATERIALS="${MATERIALS:-20}"
reads_database bench  # Benchmarks/reads/seed.sh

if [[ -z "${SKIP_BUILD:-}" ]]; then
    swift build -c release --product progress-projector >/dev/null
    swift build -c release --product analytics-aggregator >/dev/null
fi
BIN="${BENCH_BIN:-$(swift build -c release --show-bin-path)}"  # BENCH_BIN: compare another build
PGBENCH="$(pg_bindir)/pgbench"
[[ -x "$PGBENCH" ]] || PGBENCH=pgbench
ulimit -n 65536 2>/dev/null || ulimit -n "$(ulimit -Hn)"

PROGRESS_PORT=$(free_port); reads_start progress-projector "$PROGRESS_PORT"
ANALYTICS_PORT=$(free_port); reads_start analytics-aggregator "$ANALYTICS_PORT"

reads_seed  # Benchmarks/reads/seed.sh
# The aggregator computes the seeded users' streak runs when it starts and finds no stored threshold.
kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'
reads_start analytics-aggregator "$ANALYTICS_PORT"
for _ in $(seq 1 300); do  # computed in the background after its start
    [[ $("$PSQL" -Atq "$DATABASE_URL" -c "SELECT count(*) > 0 FROM analytics_streak_runs") == t ]] && break
    sleep 0.2
done
[[ $("$PSQL" -Atq "$DATABASE_URL" -c "SELECT count(*) > 0 FROM analytics_streak_runs") == t ]] || { echo "no streak runs" >&2; exit 1; }
"$PSQL" -q "$DATABASE_URL" -c "ANALYZE"
# With no broker, a projection's first assignment check (30 s after start) makes its admin client;
# that costs the process a 100–700 ms hiccup (also before the streak runs), which would land in
# whichever endpoint's window is running then: wait for it to pass.
sleep 35

TOKEN=$(reads_token)

ENDPOINTS=(
    "healthz|http://127.0.0.1:$PROGRESS_PORT/healthz"
    "reading-progress|http://127.0.0.1:$PROGRESS_PORT/materials/material-8/reading-progress"
    "learning/continue|http://127.0.0.1:$PROGRESS_PORT/learning/continue"
    "learning/summary|http://127.0.0.1:$ANALYTICS_PORT/learning/summary"
    "learning/trend|http://127.0.0.1:$ANALYTICS_PORT/learning/trend"
    "activity/heatmap|http://127.0.0.1:$ANALYTICS_PORT/activity/heatmap"
    "learning/history|http://127.0.0.1:$ANALYTICS_PORT/learning/history"
)
for entry in "${ENDPOINTS[@]}"; do  # every endpoint answers 200 before it is measured
    code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "${entry#*|}")
    [[ "$code" == 200 ]] || { echo "${entry%%|*} answered $code" >&2; exit 1; }
done

cat >"$WORK/report.lua" <<'LUA'
done = function(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("RESULT %.0f %.2f %.2f %d %d\n", summary.requests / (summary.duration / 1e6),
        latency:percentile(50) / 1000, latency:percentile(99) / 1000,
        e.connect + e.read + e.write + e.timeout, e.status))
end
LUA
measure() {  # url connections seconds [script] → "rps p50 p99 socket-errors non-2xx"
    local threads=2
    (( $2 < threads )) && threads=$2
    wrk -t"$threads" -c"$2" -d"$3s" --timeout 10s --latency -s "${4:-$WORK/report.lua}" -H "Authorization: Bearer $TOKEN" "$1" \
        | awk '/^RESULT/ { print $2, $3, $4, $5, $6 }'
}
declare -A SATURATED

printf '\n%-20s %10s %9s %9s %8s %8s %7s\n' endpoint "req/s" "p50 ms" "p99 ms" "sockerr" "non-2xx" "of hz"
HEALTHZ=0
for entry in "${ENDPOINTS[@]}"; do
    read -r rps p50 p99 socket status < <(measure "${entry#*|}" "$CONNECTIONS" "$DURATION")
    [[ "${entry%%|*}" == healthz ]] && HEALTHZ=$rps
    SATURATED[${entry%%|*}]=$rps
    printf '%-20s %10s %9s %9s %8s %8s %6s%%\n' "${entry%%|*}" "$rps" "$p50" "$p99" "$socket" "$status" \
        "$(( rps * 100 / (HEALTHZ > 0 ? HEALTHZ : 1) ))"
done

# Each endpoint's own statements through pgbench (prepared, 16 clients), same run: what PostgreSQL
# and a client that does nothing but those statements reach on these cores. A read costs at least
# the HTTP layer's work (/healthz) plus its statements' work, and here both share the same two
# cores, so 1 / (1/healthz + 1/pgbench) bounds the endpoint's rate: the "ceiling" column.
mkdir -p "$WORK/sql/learning" "$WORK/sql/activity"
cat >"$WORK/sql/reading-progress.sql" <<'SQL'
\set u random(1, 1000)
SELECT material_id, status, last_position, progress_percent, total_active_seconds, first_read_at, last_read_at,
       completed_at, last_session_id, reading_target_type, knowledge_base_id
FROM reading_progress WHERE user_id = 'user-' || :u AND material_id = 'material-8';
SQL
cat >"$WORK/sql/learning/continue.sql" <<'SQL'
\set u random(1, 1000)
SELECT material_id, last_position, progress_percent, last_read_at, reading_target_type, knowledge_base_id
FROM reading_progress WHERE user_id = 'user-' || :u AND status = 'in_progress'
ORDER BY last_read_at DESC, material_id LIMIT 1;
SQL
# The analytics reads' own statements (AnalyticsReadModel.summary / .window / .sessions,
# ActivityMonths.window), without `tz`: the user's row beside the days (months) of the window of
# every today an offset in use gives, whose bounds the service binds (literals here).
LO=$(date -u -d '-1 day -6 days' +%F); HI=$(date -u -d '+1 day' +%F)
LO_MONTH=$(date -u -d "$(date -u -d '-1 day -364 days' +%Y-%m-01)" +%F)
# The user's row beside the rows of a table in a window, as AnalyticsReadModel.userRowAnd builds it.
user_row_and() {  # file "user columns" table key low high
    cat >"$1" <<SQL
\\set u random(1, 100)
SELECT $2
FROM (SELECT 1) AS one LEFT JOIN analytics_users u ON u.user_id = 'user-' || :u
LEFT JOIN $3 r ON r.user_id = 'user-' || :u AND r.$4 BETWEEN DATE '$5' AND DATE '$6';
SQL
}
user_row_and "$WORK/sql/learning/summary.sql" "u.tz_offset_minutes, u.materials_completed, u.last_active_day, u.longest_streak_days,
       u.last_run_start, u.last_run_end, u.materials_day, u.materials_day_count, r.day, r.active_seconds" analytics_daily day "$LO" "$HI"
user_row_and "$WORK/sql/learning/trend.sql" "u.tz_offset_minutes, r.day, r.active_seconds" analytics_daily day "$LO" "$HI"
# The heatmap's: the months holding the 365 days ending today.
user_row_and "$WORK/sql/activity/heatmap.sql" "u.tz_offset_minutes, r.month, r.seconds" analytics_months month "$LO_MONTH" "$HI"
cat >"$WORK/sql/learning/history.sql" <<'SQL'
\set u random(1, 100)
SELECT client_session_id, material_id, active_seconds, completed, started_at, closed_at, last_event_at
FROM analytics_sessions WHERE user_id = 'user-' || :u ORDER BY started_at DESC, client_session_id DESC LIMIT 21;
SQL
printf '\n%-20s %10s %10s %10s %8s   (pgbench -M prepared -c 16 of the endpoint statements; ceiling = 1/(1/healthz + 1/pgbench))\n' \
    endpoint "req/s" "pgbench" "ceiling" "of ceil"
for entry in "${ENDPOINTS[@]:1}"; do
    name=${entry%%|*}
    tps=$("$PGBENCH" -n -M prepared -c 16 -j 2 -T "$DURATION" -f "$WORK/sql/$name.sql" "$DATABASE_URL" 2>/dev/null \
        | awk '/^tps/ { printf "%.0f", $3 }')
    ceiling=$(awk -v h="$HEALTHZ" -v t="${tps:-0}" 'BEGIN { if (h > 0 && t > 0) printf "%.0f", 1 / (1 / h + 1 / t); else print 0 }')
    printf '%-20s %10s %10s %10s %7s%%\n' "$name" "${SATURATED[$name]}" "${tps:-?}" "$ceiling" \
        "$(( SATURATED[$name] * 100 / (ceiling > 0 ? ceiling : 1) ))"
done

if [[ -z "${SKIP_MANY:-}" ]]; then
    printf '\n%-20s %10s %9s %9s %8s %8s   (1,000 connections paced to half the saturated rate, %s s)\n' \
        endpoint "req/s" "p50 ms" "p99 ms" "sockerr" "non-2xx" "$DURATION"
    for entry in "${ENDPOINTS[@]:1}"; do
        # Each connection waits between its requests so that 1,000 of them offer half the rate. The
        # pause is drawn uniformly from [0, 2 × mean] before every request, the first included: with
        # one fixed pause all 1,000 connections send their first request at once and, answered
        # together, send together again — waves of 1,000 requests instead of independent clients.
        pause=$(( 2000 * 1000 / (SATURATED[${entry%%|*}] > 0 ? SATURATED[${entry%%|*}] : 1) ))
        { cat "$WORK/report.lua"; echo "delay = function() return math.random(0, 2 * $pause) end"; } >"$WORK/paced.lua"
        read -r rps p50 p99 socket status < <(measure "${entry#*|}" 1000 "$DURATION" "$WORK/paced.lua")
        printf '%-20s %10s %9s %9s %8s %8s\n' "${entry%%|*}" "$rps" "$p50" "$p99" "$socket" "$status"
    done

    printf '\n%-20s %10s %9s %9s %8s %8s   (5,000 connections, 10 s)\n' endpoint "req/s" "p50 ms" "p99 ms" "sockerr" "non-2xx"
    for entry in "${ENDPOINTS[@]}"; do
        read -r rps p50 p99 socket status < <(measure "${entry#*|}" 5000 10)
        printf '%-20s %10s %9s %9s %8s %8s\n' "${entry%%|*}" "$rps" "$p50" "$p99" "$socket" "$status"
    done
fi

#!/usr/bin/env bash
# Profile of the read endpoints (issue #43): figures per request that do not depend on how busy
# the shared cores are, and where the CPU goes. Release builds of progress-projector and
# analytics-aggregator against a throwaway PostgreSQL seeded as Benchmarks/reads/bench.sh seeds it
# (Kafka at a closed port: only the read path runs). Per endpoint, `wrk` with CONNECTIONS
# keep-alive connections for DURATION seconds (one token, user-7), and over that window:
#   - req/s and its share of `/healthz` in the same run,
#   - CPU of the service per request (utime + stime of the process, /proc/<pid>/stat),
#   - CPU of the service's PostgreSQL backends per request (found by application_name),
#   - shared-buffer hits and tuples fetched per request (pg_stat_database deltas: the same
#     statements give the same counts, however loaded the machine is).
#   - how busy the machine's cores were (/proc/stat): below 100 % the endpoint is not bound by CPU
#     but by how many requests are in flight at once (the service's DATABASE_POOL_SIZE statements).
# Then, for PROFILED endpoints, `perf record -e cpu-clock -g` of the service over another window
# under the same load, and the top frames (`perf report --no-children`) in OUT/<endpoint>.txt.
# (callgrind cannot run these services: valgrind 3.19 faults in libdispatch's thread creation.)
# Usage: Benchmarks/reads/profile.sh [DURATION] [OUT]   (defaults 6, docs/profiles/reads)
#        CONNECTIONS (50), PROFILED ("healthz reading-progress learning-summary activity-heatmap"),
#        SKIP_BUILD=1 skips the build; BENCH_BIN=dir runs the binaries in dir;
#        BACKENDS=1 also profiles the service's PostgreSQL backends (OUT/<endpoint>.postgres.txt).
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/lib/common.sh
source Benchmarks/reads/seed.sh
DURATION="${1:-6}"
OUT="${2:-docs/profiles/reads}"
CONNECTIONS="${CONNECTIONS:-50}"
PROFILED="${PROFILED:-healthz reading-progress learning-summary activity-heatmap}"
USERS="${USERS:-1000}"
MATERIALS="${MATERIALS:-20}"
reads_database profile  # Benchmarks/reads/seed.sh
mkdir -p "$OUT"

if [[ -z "${SKIP_BUILD:-}" ]]; then
    swift build -c release --product progress-projector >/dev/null
    swift build -c release --product analytics-aggregator >/dev/null
fi
BIN="${BENCH_BIN:-$(swift build -c release --show-bin-path)}"

# The services create their tables; then the seed, and the aggregator restarted: it computes the
# seeded users' streak runs as it starts.
declare -A PID_OF
PROGRESS_PORT=$(free_port); reads_start progress-projector "$PROGRESS_PORT"; PID_OF[progress-projector]=${PIDS[-1]}
ANALYTICS_PORT=$(free_port); reads_start analytics-aggregator "$ANALYTICS_PORT"
reads_seed
kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'
reads_start analytics-aggregator "$ANALYTICS_PORT"; PID_OF[analytics-aggregator]=${PIDS[-1]}
"$PSQL" -q "$DATABASE_URL" -c "ANALYZE"
# Past the projections' first assignment check with no broker (a 100–700 ms hiccup, bench.sh).
sleep "${SETTLE:-35}"

TOKEN=$(reads_token)
cat >"$WORK/report.lua" <<'LUA'
done = function(summary, latency, requests)
    local e = summary.errors
    io.write(string.format("RESULT %d %.0f %d\n", summary.requests, summary.requests / (summary.duration / 1e6),
        e.connect + e.read + e.write + e.timeout + e.status))
end
LUA
load() {  # url seconds → "requests rps errors"
    wrk -t2 -c"$CONNECTIONS" -d"$2s" --timeout 10s -s "$WORK/report.lua" -H "Authorization: Bearer $TOKEN" "$1" \
        | awk '/^RESULT/ { print $2, $3, $4 }'
}
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }  # utime + stime of a process
backend_ticks() {  # of the PostgreSQL backends of application $1
    local total=0 pid
    for pid in $("$PSQL" -Atq "$DATABASE_URL" -c "SELECT pid FROM pg_stat_activity WHERE application_name = '$1'"); do
        [[ -r /proc/$pid/stat ]] && total=$(( total + $(ticks "$pid") ))
    done
    echo "$total"
}
cpu_ticks() { awk '/^cpu / { print $2 + $3 + $4 + $6 + $7 + $8, $5 }' /proc/stat; }  # "busy idle" of the machine
db_counters() {  # "blks_hit tup_fetched"
    "$PSQL" -Atq -F' ' "$DATABASE_URL" -c "SELECT blks_hit, tup_fetched FROM pg_stat_database WHERE datname = current_database()"
}
per() { awk -v a="$1" -v b="$2" -v n="$3" -v k="${4:-1}" 'BEGIN { printf "%.1f", (b - a) * k / (n > 0 ? n : 1) }'; }

TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))
# The top frames of a recording: by shared object (first $3 lines) and by symbol (first $4, cut at $5 characters).
top_frames() {  # perf.data "who" dsos symbols width
    set +o pipefail  # head closes perf report's pipe early
    echo "# perf record -e cpu-clock -g -p $2 -- sleep $DURATION, under wrk -t2 -c$CONNECTIONS $path"
    echo "# (${BACKENDS:+BACKENDS=1 }Benchmarks/reads/profile.sh $DURATION; $(date -u +%F), release build, 2 shared cores)"
    echo "# by shared object"
    perf report -i "$1" --stdio --no-children --sort dso -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n "$3"
    echo "# by symbol (all threads)"
    perf report -i "$1" --stdio --no-children --sort dso,sym -g none 2>/dev/null | grep -v '^#' | grep -v '^$' | head -n "$4" | cut -c1-"$5"
    set -o pipefail
}
ENDPOINTS=(
    "healthz|progress-projector|$PROGRESS_PORT|/healthz"
    "reading-progress|progress-projector|$PROGRESS_PORT|/materials/material-8/reading-progress"
    "learning-continue|progress-projector|$PROGRESS_PORT|/learning/continue"
    "analytics-healthz|analytics-aggregator|$ANALYTICS_PORT|/healthz"
    "learning-summary|analytics-aggregator|$ANALYTICS_PORT|/learning/summary"
    "learning-trend|analytics-aggregator|$ANALYTICS_PORT|/learning/trend"
    "activity-heatmap|analytics-aggregator|$ANALYTICS_PORT|/activity/heatmap"
    "learning-history|analytics-aggregator|$ANALYTICS_PORT|/learning/history"
)
printf '%-18s %9s %7s %6s %12s %12s %9s %10s %6s\n' endpoint "req/s" "of hz" errors "svc µs/req" "pg µs/req" "hits/req" "tuples/req" "busy"
HEALTHZ=0
for entry in "${ENDPOINTS[@]}"; do
    IFS='|' read -r name service port path <<<"$entry"
    pid=${PID_OF[$service]}
    load "http://127.0.0.1:$port$path" 1 >/dev/null  # warm: connections and prepared statements
    sleep 1.1  # pg_stat_database is flushed about once a second
    read -r hits0 fetched0 < <(db_counters)
    t0=$(ticks "$pid"); b0=$(backend_ticks "$service"); read -r busy0 idle0 < <(cpu_ticks)
    read -r requests rps errors < <(load "http://127.0.0.1:$port$path" "$DURATION")
    t1=$(ticks "$pid"); b1=$(backend_ticks "$service"); read -r busy1 idle1 < <(cpu_ticks)
    sleep 1.1
    read -r hits1 fetched1 < <(db_counters)
    [[ $name == healthz ]] && HEALTHZ=$rps
    printf '%-18s %9s %6s%% %6s %12s %12s %9s %10s %5s%%\n' "$name" "$rps" "$(( rps * 100 / (HEALTHZ > 0 ? HEALTHZ : 1) ))" "$errors" \
        "$(per "$t0" "$t1" "$requests" "$TICK_US")" "$(per "$b0" "$b1" "$requests" "$TICK_US")" \
        "$(per "$hits0" "$hits1" "$requests")" "$(per "$fetched0" "$fetched1" "$requests")" \
        "$(( (busy1 - busy0) * 100 / ((busy1 - busy0) + (idle1 - idle0) > 0 ? (busy1 - busy0) + (idle1 - idle0) : 1) ))"
    if [[ " $PROFILED " == *" $name "* ]]; then
        load "http://127.0.0.1:$port$path" $(( DURATION + 2 )) >/dev/null &
        loader=$!
        sleep 1
        if [[ -n "${BACKENDS:-}" ]]; then
            backends=$("$PSQL" -Atq "$DATABASE_URL" -c "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE application_name = '$service'")
            perf record -q -e cpu-clock -g -p "$backends" -o "$WORK/$name.postgres.perf" -- sleep "$DURATION" >/dev/null 2>&1 &
            backend_perf=$!
        fi
        perf record -q -e cpu-clock -g -p "$pid" -o "$WORK/$name.perf" -- sleep "$DURATION" >/dev/null 2>&1 || true
        [[ -z "${BACKENDS:-}" ]] || { wait "$backend_perf" || true; }
        wait "$loader" || true
        top_frames "$WORK/$name.perf" "<$service>" 12 60 200 >"$OUT/$name.txt"
        [[ -z "${BACKENDS:-}" ]] || top_frames "$WORK/$name.postgres.perf" "<$service's PostgreSQL backends>" 8 50 160 >"$OUT/$name.postgres.txt"
    fi
done

#!/usr/bin/env bash
# Two builds of analytics-aggregator side by side on one seeded database (Benchmarks/reads/seed.sh),
# measured alternately: per round, for each build in turn, `wrk -t2 -cCONNECTIONS -dDURATION` on
# each of ENDPOINTS, with the service's CPU per request from /proc/<pid>/stat. Same-run ratios
# (an endpoint against the same build's /healthz of the same round, and after against before)
# are what to read; one run's req/s against another's are not.
# Usage: Benchmarks/reads/ab.sh BEFORE_DIR AFTER_DIR [ROUNDS] [DURATION]
#        (dirs holding release builds of progress-projector and analytics-aggregator; the seed
#        uses AFTER_DIR's, so the database has every migration of the newer build)
#        ENDPOINTS ("/healthz /activity/heatmap /learning/summary /learning/trend"), CONNECTIONS (50)
#        SERVICE (analytics-aggregator; progress-projector measures its two builds instead, e.g. with
#        ENDPOINTS="/healthz /materials/material-8/reading-progress /learning/continue")
set -euo pipefail
cd "$(dirname "$0")/../.."
source deploy/lib/common.sh
source Benchmarks/reads/seed.sh
BEFORE="$1"; AFTER="$2"; ROUNDS="${3:-3}"; DURATION="${4:-4}"
ENDPOINTS="${ENDPOINTS:-/healthz /activity/heatmap /learning/summary /learning/trend}"
CONNECTIONS="${CONNECTIONS:-50}"
SERVICE="${SERVICE:-analytics-aggregator}"  # or progress-projector, with its ENDPOINTS
USERS=1000 MATERIALS=20
reads_database ab  # Benchmarks/reads/seed.sh

BIN="$AFTER"
reads_start progress-projector "$(free_port)"
SEED_PORT=$(free_port); reads_start analytics-aggregator "$SEED_PORT"
reads_seed
kill -TERM "${PIDS[-1]}"; wait "${PIDS[-1]}" 2>/dev/null || true; unset 'PIDS[-1]'
declare -A PORT PID
for build in after before; do
    [[ $build == after ]] && BIN="$AFTER" || BIN="$BEFORE"
    PORT[$build]=$(free_port); reads_start "$SERVICE" "${PORT[$build]}"; PID[$build]=${PIDS[-1]}
done
"$PSQL" -q "$DATABASE_URL" -c "ANALYZE"
sleep "${SETTLE:-35}"

TOKEN=$(reads_token)
cat >"$WORK/report.lua" <<'LUA'
done = function(summary, latency, requests)
    io.write(string.format("RESULT %d %.0f\n", summary.requests, summary.requests / (summary.duration / 1e6)))
end
LUA
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
TICK_US=$(( 1000000 / $(getconf CLK_TCK) ))
for build in after before; do  # the same bodies from both builds
    for path in $ENDPOINTS; do
        curl -fs -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:${PORT[$build]}$path" | sha256sum | cut -c1-16 >"$WORK/$build.$(echo "$path" | tr / _)"
    done
done
for path in $ENDPOINTS; do
    f="$WORK/after.$(echo "$path" | tr / _)"; g="$WORK/before.$(echo "$path" | tr / _)"
    [[ $path == /healthz ]] || cmp -s "$f" "$g" || { echo "$path: the builds' bodies differ" >&2; exit 1; }
done
echo "# $(uptime)"
printf '%-6s %-6s %-20s %9s %8s %11s\n' round build endpoint "req/s" "of hz" "µs/request"
for round in $(seq 1 "$ROUNDS"); do
    for build in before after; do
        for path in $ENDPOINTS; do
            pid=${PID[$build]}; t0=$(ticks "$pid")
            read -r requests rps < <(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" -s "$WORK/report.lua" \
                -H "Authorization: Bearer $TOKEN" "http://127.0.0.1:${PORT[$build]}$path" | awk '/^RESULT/ { print $2, $3 }')
            t1=$(ticks "$pid")
            [[ $path == /healthz ]] && HZ=$rps
            printf '%-6s %-6s %-20s %9s %7s%% %11s\n' "$round" "$build" "$path" "$rps" "$(( rps * 100 / HZ ))" \
                "$(awk -v a="$t0" -v b="$t1" -v n="$requests" -v k="$TICK_US" 'BEGIN { printf "%.1f", (b - a) * k / n }')"
        done
    done
done
echo "# $(uptime)"

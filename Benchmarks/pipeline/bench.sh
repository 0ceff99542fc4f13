#!/usr/bin/env bash
# The whole pipeline under a sustained load (issue #14): ingest, progress projector, analytics
# aggregator and realtime notifier as separate release processes, as in production, over the
# infrastructure of `backbone dev --infra-only` (embedded Kafka mock cluster, private
# PostgreSQL, SeaweedFS), all on loopback on this machine. Then `pipeline-bench` steps a fixed
# offered rate up (batches of 100 events, many users, subscribed WebSocket clients) and reports,
# per rate: accepted events/s, every consumer's lag (p50/p99/max, records and seconds), POST →
# GET reading-progress, POST → summary, POST → progress_updated latencies and the CPU of every
# process; the sustainable rate. Afterwards, with the stack stopped, `IngestBench` measures, in
# the same run, ingest's standalone saturated rate and the raw librdkafka produce rate of the
# same records.
#
# Usage: Benchmarks/pipeline/bench.sh [--long] [pipeline-bench options]
#   --long                 60 s per step (default 20 s)
#   pipeline-bench options --rates 2000,5000,… --step-seconds S --users N --subscribers N
#                          --connections C --drain-seconds S
# Ports: offset by $BENCH_PORT_OFFSET (default 2400) from the services' defaults.
# PIPELINE_BIN=dir runs the release binaries in dir (say, a copy of an earlier build) and builds nothing.
# PIPELINE_INGEST_ALONE=0 skips the standalone ingest run (when only the stages' CPU per event is wanted).
# PIPELINE_PIDS_FILE=path writes the stack's "name=pid" list and its DATABASE_URL there once it is up (to profile it).
set -euo pipefail
cd "$(dirname "$0")/../.."
WORK="$(mktemp -d)"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

ARGS=()
for arg in "$@"; do
    if [[ "$arg" == --long ]]; then ARGS+=(--step-seconds 60); else ARGS+=("$arg"); fi
done

BIN="${PIPELINE_BIN:-.build/release}"
if [[ -z "${PIPELINE_BIN:-}" ]]; then
    products=(backbone ingest progress-projector analytics-aggregator realtime-notifier pipeline-bench)
    [[ "${PIPELINE_INGEST_ALONE:-1}" == 0 ]] || products+=(IngestBench)
    for product in "${products[@]}"; do
        swift build -c release --product "$product" >/dev/null
    done
fi

OFFSET="${BENCH_PORT_OFFSET:-2400}"
export BACKBONE_HOME="$WORK/home"
mkdir -p "$BACKBONE_HOME"
env -u DATABASE_URL -u S3_ENDPOINT -u KAFKA_BROKERS -u JWT_SECRET LOG_LEVEL=warning \
    "$BIN/backbone" dev --infra-only --port-offset "$OFFSET" >"$WORK/infra.log" 2>&1 &
INFRA=$!
PIDS+=("$INFRA")
for _ in $(seq 1 240); do
    [[ -f "$BACKBONE_HOME/dev.env" ]] && break
    kill -0 "$INFRA" 2>/dev/null || { cat "$WORK/infra.log" >&2; exit 1; }
    sleep 0.5
done
[[ -f "$BACKBONE_HOME/dev.env" ]] || { echo "backbone dev --infra-only did not come up" >&2; cat "$WORK/infra.log" >&2; exit 1; }
set -a
# shellcheck disable=SC1091
. "$BACKBONE_HOME/dev.env"
set +a

declare -A PORT=([ingest]=$((8080 + OFFSET)) [progress-projector]=$((8081 + OFFSET))
                 [analytics-aggregator]=$((8082 + OFFSET)) [realtime-notifier]=$((8084 + OFFSET)))
PIDLIST="infra=$INFRA"
for service in ingest progress-projector analytics-aggregator realtime-notifier; do
    LOG_LEVEL=warning HTTP_HOST=127.0.0.1 HTTP_PORT="${PORT[$service]}" \
        INGEST_RATE_LIMIT_PER_SECOND=100000 INGEST_RATE_LIMIT_BURST=100000 \
        "$BIN/$service" >"$WORK/$service.log" 2>&1 &
    PIDS+=("$!")
    PIDLIST="$PIDLIST,$service=$!"
done
for service in ingest progress-projector analytics-aggregator realtime-notifier; do
    for _ in $(seq 1 240); do
        curl -fsS "http://127.0.0.1:${PORT[$service]}/readyz" >/dev/null 2>&1 && break
        sleep 0.5
    done
    curl -fsS "http://127.0.0.1:${PORT[$service]}/readyz" >/dev/null || { echo "$service is not ready" >&2; tail -20 "$WORK/$service.log" >&2; exit 1; }
done
# PostgreSQL's backends are where the projections' SQL runs: count the postmaster and its children.
PG_PORT="$(sed -n 's|.*@[^:/]*:\([0-9]*\)/.*|\1|p' <<<"$DATABASE_URL")"
PG_PID="$(ss -ltnpH "sport = :$PG_PORT" 2>/dev/null | sed -n 's/.*"postgres",pid=\([0-9]*\).*/\1/p' | head -1)"
[[ -n "$PG_PID" ]] && PIDLIST="$PIDLIST,postgres=$PG_PID"

[[ -n "${PIPELINE_PIDS_FILE:-}" ]] && printf "%s\n%s\n" "$PIDLIST" "$DATABASE_URL" >"$PIPELINE_PIDS_FILE"

INGEST_URL="http://127.0.0.1:${PORT[ingest]}" PROGRESS_URL="http://127.0.0.1:${PORT[progress-projector]}" \
ANALYTICS_URL="http://127.0.0.1:${PORT[analytics-aggregator]}" REALTIME_URL="http://127.0.0.1:${PORT[realtime-notifier]}" \
PIPELINE_PIDS="$PIDLIST" "$BIN/pipeline-bench" "${ARGS[@]}" | tee "$WORK/pipeline.txt"

for pid in "${PIDS[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null || true; done
PIDS=()
if [[ "${PIPELINE_INGEST_ALONE:-1}" == 0 ]]; then
    printf "load average: %s; %s cores\n" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
    exit 0
fi

echo
echo "ingest alone, same run (IngestBench 2000 8: its own embedded broker and PostgreSQL):"
env -u DATABASE_URL -u KAFKA_BROKERS .build/release/IngestBench 2000 8 2>/dev/null | { grep -v '"level"' || true; } | tee "$WORK/ingest.txt"
sustainable="$(sed -n 's/^pipeline-sustainable=//p' "$WORK/pipeline.txt")"
saturated="$(sed -n 's/^ingest saturated (HTTP→Kafka ack) *\([0-9]*\) events.*/\1/p' "$WORK/ingest.txt")"
raw="$(sed -n 's/^raw librdkafka produce (floor) *\([0-9]*\) records.*/\1/p' "$WORK/ingest.txt")"
ceiling="$(sed -n 's/^pipeline-cpu-ceiling=//p' "$WORK/pipeline.txt")"
echo
awk -v s="$sustainable" -v i="$saturated" -v r="$raw" -v c="${ceiling:-0}" 'BEGIN {
    printf "sustainable pipeline rate %d events/s | ingest standalone saturated %d events/s | raw librdkafka produce %d records/s\n", s, i, r
    if (i > 0) printf "sustainable / ingest standalone: %.1f %% (goal >= 80 %%)\n", 100 * s / i
    # Ingest alone saturated keeps these cores busy with ingest, its ledger, broker and load generator;
    # the pipeline does that and every consumer stage too, on the same cores.
    if (i > 0 && c > 0) printf "the pipeline CPU ceiling on these cores (its cost per event, all stages): %d events/s = %.1f %% of ingest standalone\n", c, 100 * c / i
}'
printf "load average: %s; %s cores\n" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"

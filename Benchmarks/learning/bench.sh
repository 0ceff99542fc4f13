#!/usr/bin/env bash
# Benchmark: recall answers analysed by the built-in analyser while the reading pipeline runs.
# Starts `backbone dev` in a fresh folder (ports 8730…, the one origin on 8730), mints a token for
# each of USERS users (`backbone token --user`), and runs Benchmarks/learning/recall.py against
# it: every user joined to `user:{id}` (Phoenix protocol, through the gateway), `POST
# /learning/sessions` at each of RATES answers a second for SECONDS seconds through APP_BASE_URL,
# reading-event batches (50 events) at READING_BATCHES_PER_SECOND alongside; for each rate one
# line: the rate reached, the p50/p99 from the POST's send to the session's `analysis_ready`,
# every session checked (202, exactly one push, `GET /learning/sessions/{id}` analysed), every
# reading event accepted; then the CPU of the stack, its PostgreSQL, nginx and the load generator,
# and the projections' batches (/metrics) over the same step. Exit 1 when a check fails.
# Needs the Python tools deploy/test.sh installs into .venv (websockets).
# BENCH_DEV_ENV=path/to/dev.env uses a stack already running (BENCH_DEV_PID its process) instead.
# Usage: Benchmarks/learning/bench.sh [BACKBONE]   (default .build/debug/backbone)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
BIN="${1:-.build/debug/backbone}"
USERS="${USERS:-100}"
WORK="$(mktemp -d /tmp/learning-bench.XXXX)"
chmod 755 "$WORK"  # the private PostgreSQL lives in the folder (the postgres user reaches it)
. Benchmarks/lib/dev_stack.sh
cleanup() {
    dev_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
if [[ -n "${BENCH_DEV_ENV:-}" ]]; then
    ENV_FILE="$BENCH_DEV_ENV"
    PID="${BENCH_DEV_PID:?BENCH_DEV_PID: the process of the running stack}"
else
    # The per-user limits are the app's, not what is measured here: 500 answers a second over
    # USERS users is more than one person types.
    export LOG_LEVEL=warning INGEST_RATE_LIMIT_PER_SECOND=100000 INGEST_RATE_LIMIT_BURST=100000
    dev_start "$BIN" "$WORK/home" --port-offset 730
    PID=$DEV
    ENV_FILE="$WORK/home/dev.env"
fi
set -a; . "$ENV_FILE"; set +a
# The sample path's lessons are loaded by `backbone dev` through the write edge: wait until the
# read side has the last one (a session for a lesson ingest does not know is 404).
TOKEN="$("$BIN" token --user bench-1)"
for _ in $(seq 1 120); do
    [[ "$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $TOKEN" "$APP_BASE_URL/lessons/lesson-sleep")" == 200 ]] && break
    sleep 0.5
done
for i in $(seq 1 "$USERS"); do echo "bench-$i $("$BIN" token --user "bench-$i")"; done > "$WORK/tokens"
python3 Benchmarks/learning/recall.py "$ENV_FILE" "$WORK/tokens" "$PID"

#!/usr/bin/env bash
# Benchmark: CrowdRoom's social layer under load — comments and likes at RATE a second for
# SECONDS through the one origin of a `backbone dev` (every service, the embedded broker, the
# private PostgreSQL and SeaweedFS), timed from each post to the owner's push on user:{owner},
# then the room's counts checked against the writes accepted (Benchmarks/social/social_bench.py).
# Usage: Benchmarks/social/bench.sh BACKBONE [RATE] [SECONDS]   (defaults: 1000, 10)
# Environment: WORKERS (posting processes, default 2), CONNECTIONS (keep-alive connections each, default 48).
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
BIN="$1"; RATE="${2:-1000}"; SECONDS_="${3:-10}"
WORK="$(mktemp -d /tmp/social-bench.XXXX)"
. Benchmarks/lib/dev_stack.sh
cleanup() {
    dev_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
# DATABASE_POOL_SIZE, when set, sizes every service's pool (each social write holds one of
# ingest's connections until the broker acknowledged its record).
LOG_LEVEL=warning INGEST_SOCIAL_RATE_LIMIT_PER_SECOND=1000000 INGEST_SOCIAL_RATE_LIMIT_BURST=1000000 \
    DATABASE_POOL_SIZE="${DATABASE_POOL_SIZE:-10}" dev_start "$BIN" "$WORK/home" --port-offset "${BENCH_PORT_OFFSET:-2400}"
value() { dev_value "$WORK/home" "$1"; }
BENCH_DEV_PID="$DEV" BENCH_DEV_HOME="$WORK/home" BENCH_DEV_DATABASE_URL="$(value DATABASE_URL)" python3 Benchmarks/social/social_bench.py "$(value APP_BASE_URL)" "$(value JWT_SECRET)" \
    Tests/USDTests/Fixtures/roomscan.usdz Tests/USDTests/Fixtures/roomscan.roomplan.json "$RATE" "$SECONDS_" \
    "${WORKERS:-2}" "${CONNECTIONS:-48}"

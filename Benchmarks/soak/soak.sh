#!/usr/bin/env bash
# Benchmark: memory under a steady load. Starts `backbone dev` in a fresh folder (ports 8680…),
# runs Benchmarks/soak/soak.py against it for MINUTES (default 60): reading batches from 300
# users, a room upload every 4 s, progress/continue/summary reads, 50 WebSocket clients on their
# user channels; the memory (PSS) of the stack's process, its PostgreSQL and its SeaweedFS
# every 15 s, and the growth per minute of the second half. Stops the stack with Ctrl-C.
# Needs what deploy/dev.sh installs. Usage: Benchmarks/soak/soak.sh [MINUTES] [BACKBONE]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
MINUTES="${1:-60}"
BIN="${2:-.build/release/backbone}"
WORK="$(mktemp -d /tmp/soak.XXXX)"
chmod 755 "$WORK"  # the private PostgreSQL lives in the folder (the postgres user reaches it)
DEV=""
cleanup() {
    if [[ -n "$DEV" ]]; then kill -INT "$DEV" 2>/dev/null || true; wait "$DEV" 2>/dev/null || true; fi
    rm -rf "$WORK"
}
trap cleanup EXIT
BACKBONE_HOME="$WORK/home" LOG_LEVEL=warning INGEST_RATE_LIMIT_PER_SECOND=100000 INGEST_RATE_LIMIT_BURST=100000 \
    "$BIN" dev --port-offset 600 > "$WORK/dev.log" 2>&1 &
DEV=$!
for _ in $(seq 1 240); do [[ -f "$WORK/home/dev.env" ]] && break; sleep 0.5; done
[[ -f "$WORK/home/dev.env" ]] || { echo "backbone dev did not come up" >&2; cat "$WORK/dev.log" >&2; exit 1; }
SOAK_HOME="$WORK/home" SOAK_PG_DIR="$WORK/home/postgres" python3 Benchmarks/soak/soak.py "$WORK/home/dev.env" "$DEV" "$MINUTES"

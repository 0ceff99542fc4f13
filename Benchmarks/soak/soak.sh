#!/usr/bin/env bash
# Benchmark: memory under a steady load. Starts `backbone dev` in a fresh folder (ports 8680…),
# runs Benchmarks/soak/soak.py against it for MINUTES (default 60): reading batches from 300
# users, a room upload every 4 s, progress/continue/summary reads, 50 WebSocket clients on their
# user channels; the memory (PSS and private size) of each process every 15 s, and the growth per
# minute of the second half. Stops the stack with Ctrl-C. Needs the Python tools deploy/test.sh
# installs into .venv (deploy/requirements-test.txt: websockets, confluent-kafka).
#
# SOAK_SERVICES=separate runs the deployment's shape instead: `backbone dev --infra-only` holds
# the embedded broker (and starts PostgreSQL and SeaweedFS), and each service runs as its own
# executable (BACKBONE's folder: ingest, progress-projector, analytics-aggregator,
# transcode-worker, realtime-notifier, built with `swift build`), so that each service process
# is measured on its own and the broker's in-memory log (5 MiB a partition) is not counted in
# any of them.
# Usage: Benchmarks/soak/soak.sh [MINUTES] [BACKBONE]
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
MINUTES="${1:-60}"
BIN="${2:-.build/release/backbone}"
WORK="$(mktemp -d /tmp/soak.XXXX)"
chmod 755 "$WORK"  # the private PostgreSQL lives in the folder (the postgres user reaches it)
. Benchmarks/lib/dev_stack.sh
SERVICE_PIDS=""
cleanup() {
    for pid in ${SERVICE_PIDS//,/ }; do kill -TERM "${pid#*:}" 2>/dev/null || true; done
    for pid in ${SERVICE_PIDS//,/ }; do wait "${pid#*:}" 2>/dev/null || true; done
    dev_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
export LOG_LEVEL=warning INGEST_RATE_LIMIT_PER_SECOND=100000 INGEST_RATE_LIMIT_BURST=100000
DEV_ARGS=(--port-offset 600)
[[ "${SOAK_SERVICES:-}" == separate ]] && DEV_ARGS+=(--infra-only)
dev_start "$BIN" "$WORK/home" "${DEV_ARGS[@]}"
ENV_FILE="$WORK/home/dev.env"
if [[ "${SOAK_SERVICES:-}" == separate ]]; then
    ENV_FILE="$WORK/services.env"
    cp "$WORK/home/dev.env" "$ENV_FILE"
    port=8680
    URLS=()
    for service in ingest:INGEST_URL progress-projector:PROGRESS_URL analytics-aggregator:ANALYTICS_URL \
                   transcode-worker:TRANSCODE_URL realtime-notifier:REALTIME_URL; do
        name="${service%%:*}"
        (set -a; . "$WORK/home/dev.env"; set +a; HTTP_HOST=127.0.0.1 HTTP_PORT=$port exec "$(dirname "$BIN")/$name") \
            > "$WORK/$name.log" 2>&1 &
        SERVICE_PIDS+="${SERVICE_PIDS:+,}$name:$!"
        echo "${service#*:}=http://127.0.0.1:$port" >> "$ENV_FILE"
        URLS+=("http://127.0.0.1:$port")
        port=$((port + 1))
    done
    for url in "${URLS[@]}"; do
        for _ in $(seq 1 240); do curl -sf "$url/readyz" > /dev/null && break; sleep 0.5; done
        curl -sf "$url/readyz" > /dev/null || { echo "$url is not ready" >&2; tail -n 20 "$WORK"/*.log >&2; exit 1; }
    done
fi
SOAK_SERVICE_PIDS="$SERVICE_PIDS" SOAK_HOME="$WORK/home" SOAK_PG_DIR="$WORK/home/postgres" \
    python3 Benchmarks/soak/soak.py "$ENV_FILE" "$DEV" "$MINUTES"
# What the embedded broker holds at the end: the part of its process's memory that is its log.
echo
python3 Benchmarks/soak/broker_log.py "$ENV_FILE"

#!/usr/bin/env bash
# Benchmark: what `backbone dev` accepts — ingest with every other service of the stack in the
# same process, the embedded broker, the private PostgreSQL and SeaweedFS, as a developer runs it.
# Per round: a fresh stack (its own BACKBONE_HOME, ports 8380…), a material, 100 user tokens, then
# `wrk` posting batches of 100 fresh events (Benchmarks/dev/post.lua, random user per batch) over
# CONNECTIONS keep-alive connections: 5 s unreported warm-up, DURATION s measured; prints accepted
# events/s, p50/p99 per batch and non-200 answers, then stops the stack with Ctrl-C (it drains).
# With two binaries the rounds alternate between them (A B A B …), so both see the same machine.
# Needs: wrk, and what deploy/dev.sh installs (PostgreSQL, SeaweedFS in .venv).
# Usage: Benchmarks/dev/ingest.sh BACKBONE_A [BACKBONE_B] [ROUNDS]   (DURATION=20, CONNECTIONS=16)
set -euo pipefail
cd "$(dirname "$0")/../.."
export PATH="$PWD/.venv/bin:$PATH"
BINARIES=("$1")
ROUNDS="${3:-2}"
if [[ -n "${2:-}" ]]; then BINARIES+=("$2"); fi
DURATION="${DURATION:-20}"
CONNECTIONS="${CONNECTIONS:-16}"
WORK="$(mktemp -d /tmp/dev-ingest-bench.XXXX)"
. Benchmarks/lib/dev_stack.sh
cleanup() {
    dev_stop
    rm -rf "$WORK"
}
trap cleanup EXIT
round() {
    local bin="$1" home="$WORK/home"
    rm -rf "$home"; mkdir -p "$home"
    LOG_LEVEL=warning INGEST_RATE_LIMIT_PER_SECOND=1000000 INGEST_RATE_LIMIT_BURST=1000000 dev_start "$bin" "$home" --port-offset 300
    local ingest; ingest="$(dev_value "$home" INGEST_URL)"
    local service; service="$(BACKBONE_HOME="$home" "$bin" token --user catalog --service | tail -n 1)"
    curl -sf -o /dev/null -X PUT -H "Authorization: Bearer $service" -H 'Content-Type: application/json' \
        -d '{"readingTargetType":"knowledgeSource","knowledgeBaseId":"kb1"}' "$ingest/materials/m1"
    for u in $(seq 1 100); do BACKBONE_HOME="$home" "$bin" token --user "load-$u" | tail -n 1; done > "$WORK/tokens.txt"
    export DEV_BENCH_TOKENS="$WORK/tokens.txt"
    wrk -t2 -c"$CONNECTIONS" -d5s -s Benchmarks/dev/post.lua "$ingest" > /dev/null 2>&1
    local out; out="$(wrk -t2 -c"$CONNECTIONS" -d"${DURATION}s" --latency -s Benchmarks/dev/post.lua "$ingest" 2>"$WORK/errors")"
    printf '%-40s %8.0f events/s  p50 %-9s p99 %-9s non-200 %s\n' "$bin" \
        "$(awk '/Requests\/sec/ {print $2 * 100}' <<<"$out")" "$(awk '/ 50%/ {print $2}' <<<"$out")" \
        "$(awk '/ 99%/ {print $2}' <<<"$out")" "$(wc -l < "$WORK/errors")"
    dev_stop
}
for r in $(seq 1 "$ROUNDS"); do
    for bin in "${BINARIES[@]}"; do round "$bin"; done
done

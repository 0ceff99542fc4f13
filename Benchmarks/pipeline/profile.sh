#!/usr/bin/env bash
# Where an event's CPU goes over the whole pipeline, and how much of it is outside the services' Swift
# code (issue #43). Runs Benchmarks/pipeline/bench.sh at one rate for two steps, records a system-wide
# `perf record -e cpu-clock -g` 5 s into the second step, folds it per process
# (Benchmarks/pipeline/perf-fold.py: OUT/<stage>.txt) and prints, per service, its own CPU per event
# split into the kernel and the C libraries it calls (librdkafka, libpq, libmicrohttpd, libyajl,
# libwebsockets, the vDSO) and the rest (Swift and libc, which the Swift code's allocations drive),
# beside its PostgreSQL backends; then the floor: PostgreSQL, the broker, the load generator and
# the services' kernel and C-library time — what the pipeline would cost if the services' Swift
# code cost nothing.
# Usage: Benchmarks/pipeline/profile.sh [RATE] [OUT]   (12000, a new temporary folder)
#        PIPELINE_BIN=dir runs the release binaries in dir (else bench.sh builds them); PROFILE=0 skips perf.
set -euo pipefail
cd "$(dirname "$0")/../.."
RATE="${1:-12000}"
OUT="${2:-$(mktemp -d /tmp/pipeline-profile.XXXX)}"
mkdir -p "$OUT"
rm -f "$OUT/pids"
PIPELINE_INGEST_ALONE=0 PIPELINE_PIDS_FILE="$OUT/pids" \
    Benchmarks/pipeline/bench.sh --rates "$RATE,$RATE" --step-seconds 20 >"$OUT/bench.txt" 2>&1 &
bench=$!
until [[ -s "$OUT/pids" ]]; do kill -0 "$bench" 2>/dev/null || { tail -20 "$OUT/bench.txt" >&2; exit 1; }; sleep 0.5; done
until grep -q "^rate *$RATE ev/s" "$OUT/bench.txt"; do kill -0 "$bench" 2>/dev/null || { tail -20 "$OUT/bench.txt" >&2; exit 1; }; sleep 0.5; done
sleep 5
uptime >"$OUT/uptime.txt"
[[ "${PROFILE:-1}" == 0 ]] || perf record -q -e cpu-clock -F 1999 -g -a -o "$OUT/perf.data" -- sleep 12 >/dev/null 2>&1
uptime >>"$OUT/uptime.txt"
wait "$bench"

split="$(grep "of which the service's own process" "$OUT/bench.txt" | tail -1)"
echo "$split"
if [[ "${PROFILE:-1}" != 0 ]]; then
    for entry in $(head -1 "$OUT/pids" | tr ',' ' '); do
        [[ "${entry%%=*}" == postgres ]] && continue
        Benchmarks/pipeline/perf-fold.py "$OUT/perf.data" "${entry##*=}" 45 >"$OUT/${entry%%=*}.txt"
    done
fi
micros() { sed -n "s/.* $1 \([0-9.]*\) \/ \([0-9.]*\).*/\\$2/p" <<<"$split"; }  # stage, 1 = own process, 2 = its backends
floor=0
for stage in ingest progress-projector analytics-aggregator realtime-notifier; do
    own=$(micros "$stage" 1); backends=$(micros "$stage" 2)
    share=0
    [[ -f "$OUT/$stage.txt" ]] && share=$(sed -n '/self time by shared object/,/^$/p' "$OUT/$stage.txt" |
        awk '/kallsyms|librdkafka|libpq|libmicrohttpd|libyajl|libwebsockets|vdso/ { sub("%", "", $1); t += $1 } END { printf "%.1f", t }')
    awk -v s="$stage" -v own="$own" -v pg="$backends" -v sh="$share" 'BEGIN {
        printf "%-22s own %5.1f µs: kernel and C libraries %4.1f %% = %4.1f µs, Swift and libc %5.1f µs | its PostgreSQL %5.1f µs\n",
            s, own, sh, own * sh / 100, own - own * sh / 100, pg }'
    floor=$(awk -v f="$floor" -v own="$own" -v pg="$backends" -v sh="$share" 'BEGIN { print f + own * sh / 100 + pg }')
done
awk -v f="$floor" -v infra="$(micros infra 1)" -v load="$(micros "load generator" 1)" -v shared="$(micros "postgres (shared)" 1)" 'BEGIN {
    printf "floor without the services'"'"' Swift code: %.1f µs an event (PostgreSQL, the services'"'"' kernel and C libraries, broker %.1f, load generator %.1f)\n",
        f + infra + load + shared, infra, load }'
echo "profiles: $OUT (load average: $(paste -sd' ' "$OUT/uptime.txt" | sed 's/.*load average: //'))"

#!/usr/bin/env bash
# Benchmark (issue #17): RoomTranscoder.transcode — the transcode worker's compute core — next
# to a usd-core + trimesh + Pillow pipeline doing the same job, on three generated RoomPlan-like
# packages (~1, ~10, ~45 MB, textured), in the same run. Per package: median wall time of RUNS
# transcodes on each side (in process, start-up not counted; the Python pipeline plain and with
# --keep-texture-bytes, which skips trimesh's PNG re-encoding), the speed-ups, and the Swift peak
# RSS (GNU time) of one `--once` transcode over the `--idle` process base (and, for reference,
# over a transcode of the 54 KB test fixture, the convention of Benchmarks/usd).
# Needs: python with usd-core trimesh pygltflib Pillow numpy ($PYTHON, else .venv, else python3);
# GNU time (/usr/bin/time). Usage: Benchmarks/transcode/bench.sh [RUNS]   (default 5)
#
# Benchmarks/transcode/bench.sh latency [UPLOADS]   (default 50)
# Flow A's latency goal (upload-complete → `ready` event under 2 s p99, 10 MB scan): a release
# `backbone dev` (embedded Kafka, private PostgreSQL and SeaweedFS, every service in one process,
# ports offset by $BENCH_PORT_OFFSET, default 2300), then `flow-a-bench`: UPLOADS
# uploads of the ~10 MB package one after another, each timed from the 202 of upload-complete
# to the `ready` broadcast received on the realtime WebSocket; p50/p99/max. Meanwhile
# probe_healthz.py times /healthz of the progress projector in the same process (p50/p99/max).
set -euo pipefail
cd "$(dirname "$0")/../.."
PY="${PYTHON:-$( [[ -x .venv/bin/python ]] && echo .venv/bin/python || echo python3 )}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

if [[ "${1:-}" == latency ]]; then
    UPLOADS="${2:-50}"
    swift build -c release --product flow-a-bench >/dev/null
    swift build -c release --product backbone >/dev/null
    "$PY" Benchmarks/transcode/make_scans.py "$WORK" medium 2>/dev/null >"$WORK/scans.txt"
    export BACKBONE_HOME="$WORK/home"
    mkdir -p "$BACKBONE_HOME"
    # Private infrastructure only; a quota that fits every upload of the run.
    env -u DATABASE_URL -u S3_ENDPOINT -u KAFKA_BROKERS -u JWT_SECRET LOG_LEVEL=warning \
        INGEST_MONTHLY_UPLOAD_QUOTA_BYTES=$((64 << 30)) INGEST_RATE_LIMIT_BURST=1000 \
        .build/release/backbone dev --port-offset "${BENCH_PORT_OFFSET:-2300}" >"$WORK/dev.log" 2>&1 &
    DEV=$!
    trap 'kill -INT $DEV 2>/dev/null; wait $DEV 2>/dev/null; rm -rf "$WORK"' EXIT
    for _ in $(seq 1 240); do
        [[ -f "$BACKBONE_HOME/dev.env" ]] && break
        kill -0 $DEV 2>/dev/null || { cat "$WORK/dev.log" >&2; exit 1; }
        sleep 0.5
    done
    [[ -f "$BACKBONE_HOME/dev.env" ]] || { echo "backbone dev did not come up" >&2; cat "$WORK/dev.log" >&2; exit 1; }
    read -r name bytes meshes triangles textures <"$WORK/scans.txt"
    printf "%s: %s bytes, %s meshes, %s triangles, %s textures\n" "$name" "$bytes" "$meshes" "$triangles" "$textures"
    # Meanwhile, what the same process's other services feel: /healthz of the progress projector.
    PROGRESS_URL=$(sed -n 's/^PROGRESS_URL=//p' "$BACKBONE_HOME/dev.env" | tr -d "'\"")
    "$PY" Benchmarks/transcode/probe_healthz.py "$PROGRESS_URL" "$WORK/probe.stop" &
    PROBE=$!
    .build/release/flow-a-bench "$UPLOADS" "$WORK/$name.usdz" "$WORK/$name.roomplan.json"
    touch "$WORK/probe.stop"; wait $PROBE
    printf "load average: %s; %s cores\n" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"
    exit 0
fi

RUNS="${1:-5}"

swift build -c release --product transcode-bench >/dev/null
BIN=.build/release/transcode-bench
"$PY" Benchmarks/transcode/make_scans.py "$WORK" 2>/dev/null >"$WORK/scans.txt"

field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
max_rss_kb() { /usr/bin/time -v "$@" 2>&1 >/dev/null | sed -n 's/.*Maximum resident set size (kbytes): //p'; }

base_kb="$(max_rss_kb "$BIN" --idle)"
fixture=Tests/USDTests/Fixtures/roomscan
tiny_kb="$(max_rss_kb "$BIN" --once "$fixture.usdz" "$fixture.roomplan.json")"
printf "process base (transcode-bench --idle): %s KB max RSS\n" "$base_kb"
printf "transcode of the 54 KB test fixture roomscan.usdz: %s KB max RSS (fixed cost of a transcode: %s KB)\n\n" \
    "$tiny_kb" "$((tiny_kb - base_kb))"
printf "%-12s %11s %7s %9s %11s %12s %8s %12s %8s %13s %14s %12s %13s %s\n" package bytes meshes triangles "swift med" "python med" \
    speed-up "py kept-tex" speed-up \
    "swift RSS KB" "over base KB" "x package" "over fixture" "goal (>=5x, <3x)"
while read -r name bytes meshes triangles textures; do
    pkg="$WORK/$name.usdz" plan="$WORK/$name.roomplan.json"
    swift_line="$("$BIN" "$pkg" "$plan" "$RUNS" | tail -1)"
    python_line="$("$PY" Benchmarks/transcode/python_pipeline.py "$pkg" "$plan" "$RUNS" | tail -1)"
    tuned_line="$("$PY" Benchmarks/transcode/python_pipeline.py "$pkg" "$plan" "$RUNS" --keep-texture-bytes | tail -1)"
    [[ "$(field triangles "$swift_line")" == "$(field triangles "$python_line")" ]] ||
        echo "warning: $name triangle counts differ: $swift_line / $python_line" >&2
    s="$(field median "$swift_line")" p="$(field median "$python_line")" q="$(field median "$tuned_line")"
    rss="$(max_rss_kb "$BIN" --once "$pkg" "$plan")"
    awk -v n="$name" -v b="$bytes" -v m="$meshes" -v t="$triangles" -v s="$s" -v p="$p" -v q="$q" -v r="$rss" -v base="$base_kb" -v tiny="$tiny_kb" 'BEGIN {
        over = r - base; ratio = over * 1024 / b; up = p / s
        printf "%-12s %11d %7d %9d %10.3fs %11.3fs %7.1fx %11.3fs %7.1fx %13d %14d %11.2fx %12.2fx %s, %s\n", n, b, m, t, s, p, up, q, q / s,
            r, over, ratio,
            (r - tiny) * 1024 / b,
            (up >= 5 ? "speed met" : "speed NOT met"), (ratio < 3 ? "memory met" : "memory NOT met") }'
done <"$WORK/scans.txt"
printf "\n%s runs each; load average: %s; %s cores\n" "$RUNS" "$(cut -d' ' -f1-3 /proc/loadavg)" "$(nproc)"

#!/usr/bin/env bash
# Benchmark: `backbone usd inspect --json` vs usd-core (open + every prim's world box) on a
# 10k-prim scene packaged with a usdc root and with a usda root, in the same run.
# Needs: pip install usd-core; GNU time (/usr/bin/time). Usage: Benchmarks/usd/bench.sh [RUNS]
set -euo pipefail
cd "$(dirname "$0")/../.."
RUNS="${1:-3}"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT

swift build -c release --product backbone >/dev/null
BIN=.build/release/backbone
python3 Benchmarks/usd/make_scene.py "$WORK" >/dev/null


measure() { # label command… → best wall seconds and max RSS over RUNS
    local label="$1"; shift
    local best="" rss=0
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >/dev/null 2>&1
        read -r secs kb <"$WORK/time"
        if [[ -z "$best" ]] || awk "BEGIN{exit !($secs < $best)}"; then best="$secs"; fi
        (( kb > rss )) && rss="$kb"
    done
    printf "%-34s %8s s %10s KB\n" "$label" "$best" "$rss"
}

printf "%-34s %10s %13s\n" "case" "best wall" "peak RSS"
measure "backbone, tiny package (base)" "$BIN" usd inspect Tests/USDTests/Fixtures/misaligned.usdz --json
for ext in usdc usda; do
    file="$WORK/scene_$ext.usdz"
    printf "%-34s %10s bytes\n" "scene_$ext.usdz size" "$(stat -c %s "$file")"
    measure "backbone usd inspect ($ext)" "$BIN" usd inspect "$file" --json
    measure "usd-core open + BBoxCache ($ext)" python3 Benchmarks/usd/usdcore_bounds.py "$file"
done
measure "python3 + import pxr (usd-core base)" python3 -c "from pxr import Usd, UsdGeom"

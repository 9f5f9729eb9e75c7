# Shared helpers for the benchmarks: start a simulator, measure a command, report side by side.
# Every benchmark appends its rows to $OUT_DIR/rows.jsonl (rows.py); progress goes to stderr.
set -euo pipefail

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BIN="${TETHER_BIN:-$(cd "$BENCH_DIR/.." && swift build -c release --show-bin-path)/tether}"
OUT_DIR="$BENCH_DIR/out"
mkdir -p "$OUT_DIR"

# start_sim BACKEND [ARGS...]: runs `tether simulate` (events SIM_PACING ms apart, default 0), sets
# SIM_PID and SIM_URL (its first line).
start_sim() {
    local log="$OUT_DIR/sim-$1.log"
    "$BIN" simulate "$@" --pacing "${SIM_PACING:-0}" > "$log" 2>"$OUT_DIR/sim-$1.err" &
    SIM_PID=$!
    for _ in $(seq 1 100); do
        SIM_URL=$(head -n1 "$log" 2>/dev/null || true)
        [ -n "$SIM_URL" ] && return 0
        sleep 0.1
    done
    echo "bench: the $1 simulator did not start (see $OUT_DIR/sim-$1.err)" >&2
    exit 1
}

stop_sim() { kill "$SIM_PID" 2>/dev/null || true; wait "$SIM_PID" 2>/dev/null || true; }

# measure MARKER CMD...: JSON with seconds, bytes and tether's RSS, reading until MARKER.
measure() {
    local marker=$1; shift
    python3 "$BENCH_DIR/harness.py" --until "$marker" -- "$@"
}

# report TITLE BYTES TETHER_JSON BASELINE_JSON BASELINE_NAME [TARGET_RATIO]: a throughput row.
report() { python3 "$BENCH_DIR/report.py" "$@"; }

# row BENCHMARK TETHER BASELINE RESULT TARGET yes|no|- [NOTES]: one table row (see rows.py).
row() { python3 "$BENCH_DIR/rows.py" add "$@"; }

# commas N: 200000 → 200,000.
commas() { python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$1"; }

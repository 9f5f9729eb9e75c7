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

# measure MARKER CMD...: JSON with seconds, bytes, lines and the command's RSS, reading until
# MARKER (or EOF, or MEASURE_TIMEOUT seconds, default 300). Prints the JSON even when the marker
# never came ("found": false) and then fails. MEASURE_NO_LINES=1 leaves lines uncounted.
measure() {
    local marker=$1; shift
    python3 "$BENCH_DIR/harness.py" --until "$marker" --timeout "${MEASURE_TIMEOUT:-300}" \
        ${MEASURE_STDERR:+--stderr "$MEASURE_STDERR"} ${MEASURE_NO_LINES:+--no-lines} -- "$@"
}

# json_field JSON KEY: one field of a JSON object.
json_field() { python3 -c "import json,sys; print(json.loads(sys.argv[1])[sys.argv[2]])" "$1" "$2"; }

# ab TETHER_MARKER BASELINE_MARKER BASELINE_SCRIPT TETHER_CMD...: RUNS (default 2) rounds of
# tether and the baseline (`bash -c BASELINE_SCRIPT`) on the same stream, alternating which goes
# first (A B, B A, ...), so that neither always runs in the other's wake (between two builds,
# the order showed: bench/PROFILE.md, "The kernel takes the fast parts"). Sets TETHER_RUNS and
# BASELINE_RUNS to JSON arrays of measure's results. TETHER_STDERR: a file that collects
# tether's stderr over the runs.
ab() {
    local tether_marker=$1 baseline_marker=$2 script=$3
    shift 3
    local runs=${RUNS:-2} round tether=() baseline=()
    for round in $(seq 1 "$runs"); do
        if (( round % 2 == 1 )); then
            echo "bench:   round $round of $runs: tether, then the baseline" >&2
            tether+=("$(ab_tether "$tether_marker" "$@")")
            baseline+=("$(ab_baseline "$baseline_marker" "$script")")
        else
            echo "bench:   round $round of $runs: the baseline, then tether" >&2
            baseline+=("$(ab_baseline "$baseline_marker" "$script")")
            tether+=("$(ab_tether "$tether_marker" "$@")")
        fi
    done
    TETHER_RUNS=$(json_array "${tether[@]}")
    BASELINE_RUNS=$(json_array "${baseline[@]}")
}

# ab_tether MARKER CMD... / ab_baseline MARKER SCRIPT: one measured run of each side of `ab`.
ab_tether() {
    local marker=$1; shift
    MEASURE_NO_LINES=1 MEASURE_STDERR=${TETHER_STDERR:-} measure "$marker" "$@" || true
}
ab_baseline() { MEASURE_NO_LINES=1 measure "$1" bash -c "$2" || true; }

# json_array JSON...: one JSON array of the objects given (empty strings, from a run that
# printed nothing, are left out).
json_array() {
    python3 -c 'import json, sys; print(json.dumps([json.loads(a) for a in sys.argv[1:] if a.strip()]))' "$@"
}

# report TITLE BYTES FRAMES TETHER_RUNS BASELINE_RUNS BASELINE_NAME [NOTES]: a throughput row
# (report.py), the medians of the runs side by side.
report() { python3 "$BENCH_DIR/report.py" "$@"; }

# rss_row TITLE TETHER_RUNS [TARGET_MB]: tether's peak RSS over the runs (target < 50 MB).
rss_row() { python3 "$BENCH_DIR/report.py" rss "$@"; }

# A buffered pipeline, as a user writes it for bulk work: curl, then sed and jq with their
# default (block) output buffering.
SSE_DATA="sed -n 's/^data: //p'"

# row BENCHMARK TETHER BASELINE RESULT TARGET yes|no|- [NOTES]: one table row (see rows.py).
row() { python3 "$BENCH_DIR/rows.py" add "$@"; }

# commas N: 200000 → 200,000.
commas() { python3 -c 'import sys; print(f"{int(sys.argv[1]):,}")' "$1"; }

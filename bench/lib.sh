# Shared helpers for the benchmarks: start a simulator, time a command, report side by side.
set -euo pipefail

BIN="${TETHER_BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && swift build -c release --show-bin-path)/tether}"
OUT_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/out"
mkdir -p "$OUT_DIR"

# start_sim BACKEND [ARGS...]: runs `tether simulate`, sets SIM_PID and SIM_URL (its first line).
start_sim() {
    local log="$OUT_DIR/sim-$1.log"
    "$BIN" simulate "$@" > "$log" 2>"$OUT_DIR/sim-$1.err" &
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

# timed NAME CMD...: runs CMD under GNU time; sets SECONDS_TAKEN and PEAK_KB.
timed() {
    local name=$1; shift
    /usr/bin/time -f "%e %M" -o "$OUT_DIR/$name.time" "$@"
    read -r SECONDS_TAKEN PEAK_KB < "$OUT_DIR/$name.time"
}

# report TITLE BYTES TETHER_SECONDS TETHER_PEAK_KB BASELINE_SECONDS BASELINE_NAME
report() {
    python3 - "$@" <<'PY'
import sys
title, size, ts, tkb, bs, bname = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5]), sys.argv[6]
mb = size / 1e6
t = mb / max(ts, 1e-9); b = mb / max(bs, 1e-9)
print(f"{title}: {mb:.1f} MB — tether {t:.1f} MB/s ({ts:.2f} s, peak RSS {tkb/1024:.1f} MB) | {bname} {b:.1f} MB/s ({bs:.2f} s) | ratio {t/b:.2f}×")
PY
}

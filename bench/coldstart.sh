#!/usr/bin/env bash
# Cold start of `tether --version`: COLD_RUNS (50) runs, interleaved with `/bin/true` and
# `curl --version` run the same way (coldstart.py). Target: median < 50 ms.
source "$(dirname "$0")/lib.sh"
RUNS=${COLD_RUNS:-50}
echo "bench: cold start, $RUNS runs each of tether --version, /bin/true, curl --version" >&2
python3 "$BENCH_DIR/coldstart.py" "$RUNS" "$BIN"

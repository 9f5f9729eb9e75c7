#!/usr/bin/env bash
# `make bench`: every benchmark, each side by side with its baseline in the same run, then ONE
# markdown table on stdout (also saved to bench/out/results.md) — paste it over the table in
# docs/benchmarks.md. Progress goes to stderr.
#
# Each script appends its rows to bench/out/rows.jsonl (rows.py); table.py renders them. A script
# that fails leaves a "failed" row and makes this exit 1 once the table is printed; a target not
# met is reported in the table, not as a failure.
#
# Throughput baselines are what a user runs for bulk work: a buffered `curl -sN | sed | jq -c`
# (or, for CodexMonitor's TCP stream, bash /dev/tcp + jq), never line-buffered; every flood ends
# its stream so they flush at EOF. Each throughput row alternates tether and its baseline RUNS
# (2) times on the same stream.
#
# The whole run takes about 10 minutes on 2 cores (the two 5-minute soaks run side by side).
# BENCHES picks and orders the scripts (default: all). Shorter runs for development, e.g.
#   SOAK_SECONDS=30 FRAMES=50000 BULK_MB=200 RUNS=1 bash bench/run.sh
# Other knobs: CW_FRAMES, CM_FRAMES (per backend), CM_TIMEOUT (30 s a CodexMonitor tether run),
# OC_DELTAS=0 (skip the current-API OpenCode row), SOAK_PARALLEL=0, LIBSSH2_CEILING=0.
set -uo pipefail
cd "$(dirname "$0")"
mkdir -p out
: > out/rows.jsonl
if [ -z "${TETHER_BIN:-}" ]; then
    TETHER_BIN="$(cd .. && swift build -c release --show-bin-path)/tether"
fi
export TETHER_BIN
[ -x "$TETHER_BIN" ] || { echo "bench: no tether binary at $TETHER_BIN (make bench builds it)" >&2; exit 1; }

BENCHES=${BENCHES:-"coldstart sse-throughput opencode-events codex-worker-events codexmonitor-events codex-events latency soak tunnel gateway gateway-postgres gateway-fanout"}
failed=0
for bench in $BENCHES; do
    echo "bench: ==== $bench ====" >&2
    if ! bash "$bench.sh" >&2; then
        failed=1
        python3 rows.py add "$bench.sh" "failed" "—" "failed (see the progress output)" "—" no
    fi
done
python3 table.py out/rows.jsonl > out/results.md
cat out/results.md
exit "$failed"

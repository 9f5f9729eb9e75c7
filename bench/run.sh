#!/usr/bin/env bash
# `make bench`: every benchmark, each side by side with its baseline in the same run.
set -euo pipefail
cd "$(dirname "$0")"
for bench in sse-throughput.sh opencode-events.sh codex-worker-events.sh tunnel.sh; do
    [ -f "$bench" ] && bash "$bench"
done

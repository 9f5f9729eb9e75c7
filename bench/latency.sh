#!/usr/bin/env bash
# Added latency per event: how much later an event reaches tether's stdout as a JSON line than
# it reaches `curl -sN`'s stdout as raw SSE, from the same local server, in the same run.
#
# The server sends LAT_RATE (200) events a second for LAT_SECONDS (15) s, each stamped with its
# wall-clock send time; latency.py reads the command's stdout and timestamps each line as it
# arrives (the first 50 events are a warm-up). Baseline first, then tether, each on its own
# connection to the same endpoint. Two paths:
#   - generic: `tether sse URL -o jsonl` against the SSE simulator's /paced route;
#   - adapter: `tether events --follow -o jsonl` (OpenCode) against the OpenCode simulator's paced
#     flood (`--flood N --flood-rate R`), each `message.part.delta` carrying its send time.
# Rows: tether's p50/p99, curl's, and the difference (target: added p99 < 1 ms).
source "$(dirname "$0")/lib.sh"
RATE=${LAT_RATE:-200}
SECONDS_=${LAT_SECONDS:-15}
COUNT=$((RATE * SECONDS_))
TIMEOUT=$((SECONDS_ * 3 + 30))

lat() { python3 "$BENCH_DIR/latency.py" --expect "$COUNT" --timeout "$TIMEOUT" -- "$@"; }

# latency_row TITLE TETHER_JSON CURL_JSON: the row (latency.py row).
latency_row() { python3 "$BENCH_DIR/latency.py" row "$@"; }

# --- Generic path: tether sse.
start_sim sse
SSE_PID=$SIM_PID
URL="$SIM_URL/paced?rate=$RATE&n=$COUNT"
echo "bench: latency, tether sse: $COUNT events at $RATE/s, curl then tether" >&2
CURL=$(lat curl -sN "$URL") || true
TETHER=$(lat "$BIN" sse "$URL" --no-reconnect -o jsonl) || true
kill "$SSE_PID" 2>/dev/null; wait "$SSE_PID" 2>/dev/null || true
latency_row "added latency, \`tether sse\`, $(commas "$COUNT") events at $RATE/s" "$TETHER" "$CURL"

# --- Adapter path: tether events (OpenCode).
start_sim opencode --flood "$COUNT" --flood-rate "$RATE"
trap stop_sim EXIT
CONFIG="$OUT_DIR/opencode-latency.toml"
printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
echo "bench: latency, tether events (OpenCode): $COUNT deltas at $RATE/s, curl then tether" >&2
CURL=$(lat curl -sN "$SIM_URL/global/event") || true
TETHER=$(lat "$BIN" --config "$CONFIG" events --follow -o jsonl) || true
latency_row "added latency, \`tether events\` (OpenCode), $(commas "$COUNT") deltas at $RATE/s" "$TETHER" "$CURL"

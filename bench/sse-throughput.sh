#!/usr/bin/env bash
# Decode 200,000 SSE frames (~50 MB) from a local server through `tether sse`, side by side with
# `curl -sN | sed | jq -c` on the same stream, in the same run. Prints both throughputs, the
# ratio and tether's peak RSS.
source "$(dirname "$0")/lib.sh"
FRAMES=${FRAMES:-200000}
SIZE=${SIZE:-250}

start_sim sse
trap stop_sim EXIT
URL="$SIM_URL/flood?n=$FRAMES&size=$SIZE"
BYTES=$(curl -sN "$URL" | wc -c)

timed tether-sse "$BIN" sse "$URL" --no-reconnect -o jsonl > "$OUT_DIR/tether-sse.out"
T_S=$SECONDS_TAKEN; T_KB=$PEAK_KB
timed curl-jq bash -c "curl -sN '$URL' | sed -n 's/^data: //p' | jq -c . > '$OUT_DIR/curl-jq.out'"
B_S=$SECONDS_TAKEN

LINES=$(wc -l < "$OUT_DIR/tether-sse.out")
[ "$LINES" -eq "$FRAMES" ] || { echo "bench: tether printed $LINES events, expected $FRAMES" >&2; exit 1; }
report "sse decode ($FRAMES frames)" "$BYTES" "$T_S" "$T_KB" "$B_S" "curl|sed|jq"

#!/usr/bin/env bash
# Decode 200,000 SSE frames (~50 MB) from a local server through `tether sse`, side by side with
# `curl -sN | sed -u | jq --unbuffered -c` (line-buffered, as a live stream must be; tether flushes every
# line too) on the same stream, in the same run: both throughputs, the ratio and
# tether's memory.
source "$(dirname "$0")/lib.sh"
FRAMES=${FRAMES:-200000}
SIZE=${SIZE:-250}

start_sim sse
trap stop_sim EXIT
URL="$SIM_URL/flood?n=$FRAMES&size=$SIZE"
RAW=$(measure "id: $FRAMES" curl -sN "$URL")
BYTES=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['bytes'])" "$RAW")

TETHER=$(measure "\"id\":\"$FRAMES\"" "$BIN" sse "$URL" --no-reconnect -o jsonl)
BASELINE=$(measure "\"i\":$FRAMES," bash -c "curl -sN '$URL' | sed -u -n 's/^data: //p' | jq --unbuffered -c .")
report "\`tether sse\` decode, $(commas "$FRAMES") frames" "$BYTES" "$TETHER" "$BASELINE" "curl -sN | sed | jq -c"

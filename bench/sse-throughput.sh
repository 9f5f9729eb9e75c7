#!/usr/bin/env bash
# Decode FRAMES (200,000) SSE frames (~50 MB) from the SSE simulator's /flood (which ends the
# response after the last frame) through `tether sse`, side by side with the buffered pipeline a
# user writes for bulk work, `curl -sN URL | sed -n 's/^data: //p' | jq -c .`, on the same stream
# in the same run, alternating A B, B A (RUNS, default 2). The buffered pipeline prints its last
# block when the stream ends; both are timed to their last line. `curl -sN` alone, to /dev/null
# speed, shows the server is not what either waits for.
source "$(dirname "$0")/lib.sh"
FRAMES=${FRAMES:-200000}
SIZE=${SIZE:-250}

start_sim sse
trap stop_sim EXIT
URL="$SIM_URL/flood?n=$FRAMES&size=$SIZE"
echo "bench: tether sse, $FRAMES frames" >&2
curl -sN "$URL" -o /dev/null  # the simulator renders the flood for the first request, then serves it from memory
RAW=$(measure "id: $FRAMES" curl -sN "$URL")
BYTES=$(json_field "$RAW" bytes)

ab "\"id\":\"$FRAMES\"" "\"i\":$FRAMES," "curl -sN '$URL' | $SSE_DATA | jq -c ." \
    "$BIN" sse "$URL" --no-reconnect -o jsonl
report "\`tether sse\` decode, $(commas "$FRAMES") frames" "$BYTES" "$FRAMES" "$TETHER_RUNS" "$BASELINE_RUNS" \
    "curl -sN | sed -n 's/^data: //p' | jq -c ." "\`curl -sN\` alone $(json_field "$RAW" seconds) s"

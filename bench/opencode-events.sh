#!/usr/bin/env bash
# Normalize 200,000 OpenCode /global/event frames (`tether events` against the simulator's flood
# mode) side by side with `curl -sN | sed | jq -c` projecting the same fields.
source "$(dirname "$0")/lib.sh"
FRAMES=${FRAMES:-200000}
LAST="token$((FRAMES - 1)) "

start_sim opencode --flood "$FRAMES"
trap stop_sim EXIT
URL="$SIM_URL/global/event"
RAW=$(measure "$LAST" curl -sN "$URL")
BYTES=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['bytes'])" "$RAW")

CONFIG="$OUT_DIR/opencode.toml"
printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
TETHER=$(measure "$LAST" "$BIN" --config "$CONFIG" events --follow -o jsonl)
BASELINE=$(measure "$LAST" bash -c "curl -sN '$URL' | sed -u -n 's/^data: //p' | jq --unbuffered -c '{type: .payload.type, session: .payload.properties.sessionID, part: .payload.properties.partID, delta: .payload.properties.delta}'")
report "\`tether events\` (OpenCode), $(commas "$FRAMES") \`/global/event\` frames" "$BYTES" "$TETHER" "$BASELINE" "curl -sN | sed | jq -c"

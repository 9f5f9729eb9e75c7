#!/usr/bin/env bash
# A Codex Worker job of 100,000 events through `tether events --turn`, side by side with
# `curl -sN | sed | jq -c` on the same job stream.
source "$(dirname "$0")/lib.sh"
EVENTS=${EVENTS:-100000}

start_sim codex-worker --retention $((EVENTS + 100))
trap stop_sim EXIT
THREAD=$(curl -s -X POST "$SIM_URL/v1/threads" -d '{}' | jq -r .thread.threadId)
JOB=$(curl -s -X POST "$SIM_URL/v1/threads/$THREAD/turns" -d "{\"text\":\"long $EVENTS\"}" | jq -r .jobId)
for _ in $(seq 1 600); do
    [ "$(curl -s "$SIM_URL/v1/jobs/$JOB" | jq -r .state)" = DONE ] && break
    sleep 0.1
done
URL="$SIM_URL/v1/jobs/$JOB/events"
RAW=$(measure "job.finished" curl -sN -H 'Accept: text/event-stream' "$URL")
BYTES=$(python3 -c "import json,sys; print(json.loads(sys.argv[1])['bytes'])" "$RAW")

CONFIG="$OUT_DIR/codex-worker.toml"
printf '[profiles.bench]\nbackend = "codex-worker"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
TETHER=$(measure "turn.completed" "$BIN" --config "$CONFIG" events --turn "$JOB" --follow -o jsonl)
BASELINE=$(measure "job.finished" bash -c "curl -sN -H 'Accept: text/event-stream' '$URL' | sed -u -n 's/^data: //p' | jq --unbuffered -c '{type, seq, job: .jobId, item: .payload.itemId, delta: .payload.delta}'")
report "\`tether events --turn\` (Codex Worker), $(commas "$EVENTS") job events" "$BYTES" "$TETHER" "$BASELINE" "curl -sN | sed | jq -c"

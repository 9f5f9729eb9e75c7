#!/usr/bin/env bash
# `tether events --turn JOB --follow` (Codex Worker) on a finished job's event stream, side by
# side with the buffered pipeline a user writes for bulk work on the same stream in the same run,
# alternating A B, B A (RUNS, default 2):
#   curl -sN -H 'Accept: text/event-stream' URL | sed -n 's/^data: //p' | jq -c '{type, seq, job, item, delta}'
# The simulator runs with `--flood-close`: a job stream ends after `job.finished` (`: eof`), so
# the buffered pipeline flushes at EOF (the real worker never ends it). Jobs (CW_FRAMES, default
# FRAMES, 200,000 deltas), chosen by the prompt:
#   - long-parts (`flood N`): agentMessage items of 1,000 deltas, each started and completed;
#   - new-parts (`flood N new`): each delta in a new item, started and never completed (2N
#     events; also a memory row, tether's peak RSS, target < 50 MB).
source "$(dirname "$0")/lib.sh"
FRAMES=${CW_FRAMES:-${FRAMES:-200000}}
trap stop_sim EXIT
start_sim codex-worker --retention $((FRAMES * 2 + 100)) --flood-close

for shape in ${CW_SHAPES:-long-parts new-parts}; do
    PROMPT="flood $FRAMES"
    [ "$shape" = new-parts ] && PROMPT="flood $FRAMES new"
    THREAD=$(curl -s -X POST "$SIM_URL/v1/threads" -d '{}' | jq -r .thread.threadId)
    JOB=$(curl -s -X POST "$SIM_URL/v1/threads/$THREAD/turns" -d "{\"text\":\"$PROMPT\"}" | jq -r .jobId)
    for _ in $(seq 1 1200); do
        [ "$(curl -s "$SIM_URL/v1/jobs/$JOB" | jq -r .state)" = DONE ] && break
        sleep 0.1
    done
    URL="$SIM_URL/v1/jobs/$JOB/events"
    echo "bench: tether events --turn (Codex Worker), $shape, $FRAMES deltas" >&2
    RAW=$(measure "job.finished" curl -sN -H 'Accept: text/event-stream' "$URL")
    EVENTS=$(python3 -c 'import json,sys; print(json.loads(sys.argv[1])["lines"] // 4)' "$RAW")  # id, event, data, blank
    CONFIG="$OUT_DIR/codex-worker.toml"
    printf '[profiles.bench]\nbackend = "codex-worker"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
    ab "turn.completed" "job.finished" \
        "curl -sN -H 'Accept: text/event-stream' '$URL' | $SSE_DATA | jq -c '{type, seq, job: .jobId, item: .payload.itemId, delta: .payload.delta}'" \
        "$BIN" --config "$CONFIG" events --turn "$JOB" --follow -o jsonl
    report "\`tether events --turn\` (Codex Worker), $(commas "$EVENTS") job events ($(commas "$FRAMES") deltas), $shape" \
        "$(json_field "$RAW" bytes)" "$EVENTS" "$TETHER_RUNS" "$BASELINE_RUNS" \
        "curl -sN | sed -n 's/^data: //p' | jq -c '{type, seq, job, item, delta}'" "\`curl -sN\` alone $(json_field "$RAW" seconds) s"
    if [ "$shape" = new-parts ]; then
        rss_row "memory, \`tether events --turn\` (Codex Worker), $(commas "$FRAMES") items started and never completed" "$TETHER_RUNS"
    fi
done

#!/usr/bin/env bash
# `tether events --follow` (OpenCode) on the simulator's /global/event floods, each side by side
# with the buffered pipeline a user writes for bulk work, projecting the same fields from the
# same stream in the same run, alternating A B, B A (RUNS, default 2):
#   curl -sN URL | sed -n 's/^data: //p' | jq -c '{type, session, part, delta}'
# Streams (FRAMES, default 200,000 deltas, then session.status idle and session.idle; every
# flood ends its response, `--flood-close`, so the buffered pipeline flushes at EOF):
#   - long-parts: legacy `message.part.updated {part, delta}`, each part 1,000 deltas;
#   - new-parts: the same frames, every one opening a part that never completes (also a memory
#     row: tether's peak RSS, target < 50 MB);
#   - deltas: the current API's `message.part.delta`s of one part (OC_DELTAS=0 skips it);
#   - v2: OpenCode 2.x (`--generation 2`): `/api/event`'s `session.text.delta`s of one text item
#     in one execution, Basic auth on both sides (OC_V2=0 skips it).
# tether is timed to its `turn.completed` (the session went idle: every part it completes and the
# turn are out), the buffered pipeline to its last delta line, which it prints at EOF. `curl -sN`
# alone, read to the last delta, shows the simulator is not what either waits for.
source "$(dirname "$0")/lib.sh"
FRAMES=${FRAMES:-200000}
LAST="token$((FRAMES - 1)) "
SHAPES=${OC_SHAPES:-"long-parts new-parts"}
[ "${OC_DELTAS:-1}" = 1 ] && SHAPES="$SHAPES deltas"
[ "${OC_V2:-1}" = 1 ] && SHAPES="$SHAPES v2"
trap stop_sim EXIT

for shape in $SHAPES; do
    AUTH=""
    PASSWORD_LINE=""
    if [ "$shape" = v2 ]; then
        start_sim opencode --generation 2 --token bench --flood "$FRAMES" --flood-close
        AUTH="-u opencode:bench"
        PASSWORD_LINE='password = "bench"'
        JQ='{type: .type, session: .data.sessionID, part: .data.assistantMessageID, delta: .data.delta}'
        TITLE="\`tether events\` (OpenCode 2.x), $(commas "$FRAMES") \`session.text.delta\` frames, one text item"
    elif [ "$shape" = deltas ]; then
        start_sim opencode --flood "$FRAMES" --flood-close
        JQ='{type: .payload.type, session: .payload.properties.sessionID, part: .payload.properties.partID, delta: .payload.properties.delta}'
        TITLE="\`tether events\` (OpenCode), $(commas "$FRAMES") \`message.part.delta\` frames, one part"
    else
        start_sim opencode --legacy --flood "$FRAMES" --flood-shape "$shape" --flood-close
        JQ='{type: .payload.type, session: .payload.properties.part.sessionID, part: .payload.properties.part.id, delta: .payload.properties.delta}'
        TITLE="\`tether events\` (OpenCode), $(commas "$FRAMES") legacy \`message.part.updated {part, delta}\` frames, $shape"
    fi
    URL="$SIM_URL/global/event"
    [ "$shape" = v2 ] && URL="$SIM_URL/api/event"
    echo "bench: tether events (OpenCode), $shape, $FRAMES frames" >&2
    RAW=$(measure "$LAST" curl -sN $AUTH "$URL")
    CONFIG="$OUT_DIR/opencode.toml"
    printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n%s\n' "$SIM_URL" "$PASSWORD_LINE" > "$CONFIG"
    chmod 600 "$CONFIG"
    ab '"type":"turn.completed"' "$LAST" "curl -sN $AUTH '$URL' | $SSE_DATA | jq -c '$JQ'" \
        "$BIN" --config "$CONFIG" events --follow -o jsonl
    stop_sim
    report "$TITLE" "$(json_field "$RAW" bytes)" "$FRAMES" "$TETHER_RUNS" "$BASELINE_RUNS" \
        "curl -sN$([ -n "$AUTH" ] && echo " -u …") | sed -n 's/^data: //p' | jq -c '{type, session, part, delta}'" "\`curl -sN\` alone $(json_field "$RAW" seconds) s"
    if [ "$shape" = new-parts ]; then
        rss_row "memory, \`tether events\` (OpenCode), $(commas "$FRAMES") frames each opening a part that never completes" "$TETHER_RUNS"
    fi
done

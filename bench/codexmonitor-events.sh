#!/usr/bin/env bash
# `tether events --follow` (CodexMonitor) on the simulator's per-connection flood, side by side
# with what a user runs against the daemon's raw TCP stream, on the same stream in the same run,
# alternating A B, B A (RUNS, default 2): bash opens the socket (`/dev/tcp`: Debian's base image
# has no nc), writes the `auth` line the daemon needs, and jq reads the socket with its default
# (block) output buffering:
#   exec 3<>/dev/tcp/HOST/PORT; printf '{"id":1,"method":"auth",…}\n' >&3; jq -c '{method, thread, item, delta}' <&3
# The simulator runs with `--flood-close`: it closes each connection after its flood, so jq
# flushes at EOF (a real daemon keeps it open). Streams (CM_FRAMES, default FRAMES, 200,000
# `item/agentMessage/delta`s inside `app-server-event`s, after `turn/started`, before
# `turn/completed`):
#   - long-parts: agentMessage items of 1,000 deltas, each started and completed;
#   - new-parts: each delta in a new item, started and never completed (2N lines; also a memory
#     row, tether's peak RSS, target < 50 MB).
# tether reconnects when the daemon closes, and then gets a new flood: it is timed to its first
# `turn.completed`. A tether run is given CM_TIMEOUT (30) seconds. Tether pauses reading when it
# is behind, except while one of its calls waits for a response (the flood arrives during the
# first resync): then it queues up to 16 MiB of lines and drops the rest, which its stderr says
# (counted in the notes) before it re-reads the thread.
source "$(dirname "$0")/lib.sh"
FRAMES=${CM_FRAMES:-${FRAMES:-200000}}
TOKEN=bench-token
trap stop_sim EXIT

for shape in ${CM_SHAPES:-long-parts new-parts}; do
    start_sim codexmonitor --token "$TOKEN" --flood "$FRAMES" --flood-shape "$shape" --flood-close
    HOST=${SIM_URL%:*}
    PORT=${SIM_URL##*:}
    AUTH="{\"id\":1,\"method\":\"auth\",\"params\":{\"token\":\"$TOKEN\"}}"
    CLIENT="exec 3<>/dev/tcp/$HOST/$PORT; printf '%s\n' '$AUTH' >&3"
    echo "bench: tether events (CodexMonitor), $shape, $FRAMES deltas" >&2
    RAW=$(measure "turn/completed" bash -c "$CLIENT; cat <&3")
    CONFIG="$OUT_DIR/codexmonitor.toml"
    printf '[profiles.bench]\nbackend = "codexmonitor"\naddress = "%s"\ntoken = "%s"\n' "$SIM_URL" "$TOKEN" > "$CONFIG"
    chmod 600 "$CONFIG"
    ERR="$OUT_DIR/codexmonitor-tether-$shape.err"
    : > "$ERR"
    MEASURE_TIMEOUT=${CM_TIMEOUT:-30} TETHER_STDERR=$ERR ab '"turn.completed"' "turn/completed" \
        "$CLIENT; jq -c '{method: .params.message.method, thread: .params.message.params.threadId, item: .params.message.params.itemId, delta: .params.message.params.delta}' <&3" \
        "$BIN" --config "$CONFIG" events --follow -o jsonl
    stop_sim
    report "\`tether events\` (CodexMonitor), $(commas "$(json_field "$RAW" lines)") lines ($(commas "$FRAMES") deltas), $shape" \
        "$(json_field "$RAW" bytes)" "$(json_field "$RAW" lines)" "$TETHER_RUNS" "$BASELINE_RUNS" \
        "/dev/tcp + auth line, jq -c '{method, thread, item, delta}'" \
        "raw socket read alone $(json_field "$RAW" seconds) s; tether's stderr said it fell behind and dropped events $(grep -c 'dropped CodexMonitor events' "$ERR" || true) times over the runs"
    if [ "$shape" = new-parts ]; then
        rss_row "memory, \`tether events\` (CodexMonitor), $(commas "$FRAMES") items started and never completed" "$TETHER_RUNS"
    fi
done

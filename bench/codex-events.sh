#!/usr/bin/env bash
# `tether events --follow` on a stdio `codex` profile, side by side with what a user runs against
# `codex app-server` on stdio, on the same frames in the same run, alternating A B, B A (RUNS,
# default 2). Both read the app-server simulator's `--flood` (CX_FRAMES, default FRAMES, 200,000
# `item/agentMessage/delta`s of one agent message, after `turn/started`, before `turn/completed`),
# which it sends in its flood thread to a connection that resumes that thread, as codex streams a
# thread to its subscribers. Tether watches that thread (`--session`). The baseline is the
# pipeline a user writes for a stdio app-server: the greeting and the `thread/resume` into its
# stdin, jq reading its stdout with its default (block) buffering:
#   (printf 'initialize…\n{"method":"initialized"}\nthread/resume…\n'; sleep 600) | tether simulate codex --stdio … | jq -c '{method, thread, item, delta}'
# Why stdio: it is codex's default transport and needs no client beyond a pipe; a WebSocket
# baseline would need a client program, whose cost would be the row. The simulator runs with
# `--flood-close` (it exits after the flood, so jq flushes at EOF); tether's child is the same
# command, and tether is timed to its first `turn.completed`. A tether run is given CX_TIMEOUT
# (30) seconds.
source "$(dirname "$0")/lib.sh"
FRAMES=${CX_FRAMES:-${FRAMES:-200000}}
SIM="'$BIN' simulate codex --stdio --pacing 0 --flood $FRAMES --flood-close"
GREETING='{"id":1,"method":"initialize","params":{"clientInfo":{"name":"bench","version":"1"}}}'
THREAD=019af100-d000-7000-8000-00000000f100  # CodexAppServerSimulator.floodThreadID
RESUME='{"id":2,"method":"thread/resume","params":{"threadId":"'$THREAD'","excludeTurns":true}}'

echo "bench: tether events (codex, stdio), $FRAMES deltas" >&2
RAW=$(measure "turn/completed" bash -c "(printf '%s\n' '$GREETING' '{\"method\":\"initialized\"}' '$RESUME'; sleep 600) | $SIM")
CONFIG="$OUT_DIR/codex.toml"
printf '[profiles.bench]\nbackend = "codex"\ncommand = ["%s", "simulate", "codex", "--stdio", "--pacing", "0", "--flood", "%s", "--flood-close"]\n' \
    "$BIN" "$FRAMES" > "$CONFIG"
chmod 600 "$CONFIG"
ERR="$OUT_DIR/codex-tether.err"
: > "$ERR"
MEASURE_TIMEOUT=${CX_TIMEOUT:-30} TETHER_STDERR=$ERR ab '"turn.completed"' "turn/completed" \
    "(printf '%s\n' '$GREETING' '{\"method\":\"initialized\"}' '$RESUME'; sleep 600) | $SIM | jq -c '{method, thread: .params.threadId, item: .params.itemId, delta: .params.delta}'" \
    "$BIN" --config "$CONFIG" events --follow --session "$THREAD" -o jsonl
report "\`tether events\` (codex app-server, stdio), $(commas "$(json_field "$RAW" lines)") lines ($(commas "$FRAMES") deltas)" \
    "$(json_field "$RAW" bytes)" "$(json_field "$RAW" lines)" "$TETHER_RUNS" "$BASELINE_RUNS" \
    "the stdio pipe, jq -c '{method, thread, item, delta}'" \
    "the simulator's stdout read alone $(json_field "$RAW" seconds) s; tether's stderr said it dropped messages $(grep -c 'dropped app-server messages' "$ERR" || true) times over the runs"

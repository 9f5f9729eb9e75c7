#!/usr/bin/env bash
# The gateway (`tether serve`) over the OpenCode simulator's flood: how fast the log takes the
# events, how fast a client replays them from the log (side by side with reading the same rows
# straight out of SQLite with the sqlite3 CLI), the log's size per 100,000 events, and the
# gateway's memory while 100 SSE clients each replay the last 1,000 events and stay connected.
source "$(dirname "$0")/lib.sh"
EVENTS=${GATEWAY_EVENTS:-100000}
CLIENTS=${GATEWAY_CLIENTS:-100}
command -v sqlite3 >/dev/null || { echo "bench: gateway needs the sqlite3 CLI (apt-get install sqlite3)" >&2; exit 1; }

start_sim opencode --flood "$EVENTS"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-bench-gateway.XXXXXX")"
printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$WORK/config.toml"
"$BIN" --config "$WORK/config.toml" serve --listen 127.0.0.1:0 --db "$WORK/gateway.sqlite" >"$WORK/serve.out" 2>"$WORK/serve.err" &
GATEWAY_PID=$!
cleanup() { kill "$GATEWAY_PID" 2>/dev/null || true; wait "$GATEWAY_PID" 2>/dev/null || true; stop_sim; rm -rf "$WORK"; }
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
URL=$(head -n1 "$WORK/serve.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["listen"])')

python3 "$BENCH_DIR/gateway.py" --url "$URL" --pid "$GATEWAY_PID" --db "$WORK/gateway.sqlite" \
    --events "$EVENTS" --clients "$CLIENTS"

# Live fan-out: the OpenCode simulator's paced flood (each delta stamped with its send time)
# through the gateway to CLIENTS SSE clients; one of them is timed by latency.py, beside
# `tether events` reading the simulator's same paced flood on its own connection.
cleanup
trap - EXIT
RATE=${LAT_RATE:-200}
SECONDS_=${LAT_SECONDS:-15}
COUNT=$((RATE * SECONDS_))
TIMEOUT=$((SECONDS_ * 3 + 30))
start_sim opencode --flood "$COUNT" --flood-rate "$RATE"
WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-bench-gateway.XXXXXX")"
CURLS=()
cleanup() {
    for pid in "${CURLS[@]}"; do kill "$pid" 2>/dev/null || true; done
    kill "${GATEWAY_PID:-}" 2>/dev/null || true; wait "${GATEWAY_PID:-}" 2>/dev/null || true
    stop_sim; rm -rf "$WORK"
}
trap cleanup EXIT
printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$WORK/config.toml"
echo "bench: gateway fan-out: $COUNT deltas at $RATE/s, tether events then the gateway to $CLIENTS clients" >&2
EVENTS_JSON=$(python3 "$BENCH_DIR/latency.py" --expect "$COUNT" --last "$((COUNT - 1))" --timeout "$TIMEOUT" -- \
    "$BIN" --config "$WORK/config.toml" events --follow -o jsonl) || true
"$BIN" --config "$WORK/config.toml" serve --listen 127.0.0.1:0 --db "$WORK/gateway.sqlite" >"$WORK/serve.out" 2>"$WORK/serve.err" &
GATEWAY_PID=$!
for _ in $(seq 1 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
URL=$(head -n1 "$WORK/serve.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["listen"])')
# The timed client connects first, as soon as the gateway listens, then the other clients. It
# asks for live events only, and the flood starts when the gateway subscribes, so it joins a
# running stream: it is judged on the deltas sent while it was there, every one from the first
# it saw through the last (latency.py --last), and must have joined within the first 3 s.
python3 "$BENCH_DIR/latency.py" --expect "$((COUNT - 3 * RATE))" --last "$((COUNT - 1))" --timeout "$TIMEOUT" -- \
    curl -sN "$URL/v1/events" > "$WORK/gateway-latency.json" &
TIMED=$!
for _ in $(seq 2 "$CLIENTS"); do
    curl -sN --max-time "$TIMEOUT" "$URL/v1/events" > /dev/null &
    CURLS+=($!)
done
wait "$TIMED" || true
GATEWAY_JSON=$(cat "$WORK/gateway-latency.json")
RSS=$(awk '/VmRSS/ {print $2}' "/proc/$GATEWAY_PID/status")
python3 "$BENCH_DIR/gateway.py" fanout-row "gateway: live fan-out to $CLIENTS SSE clients, $(commas "$COUNT") deltas at $RATE/s (vs tether events)" \
    "$GATEWAY_JSON" "$EVENTS_JSON"
row "gateway: RSS during the fan-out to $CLIENTS clients" "$((RSS / 1024)) MB" "—" "$((RSS / 1024)) MB" "< 80 MB" \
    "$([ "$RSS" -lt $((80 * 1024)) ] && echo yes || echo no)"

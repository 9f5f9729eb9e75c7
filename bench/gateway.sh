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

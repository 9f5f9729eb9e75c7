#!/usr/bin/env bash
# Live fan-out: the OpenCode simulator's paced flood (each delta stamped with its send time)
# through the gateway to CLIENTS SSE clients; one of them is timed by latency.py, beside
# `tether events` reading the simulator's same paced flood on its own connection. The other
# CLIENTS - 1 are silent: one asyncio process holds them all (silent_clients.py), so the
# harness does not load the machine with hundreds of curl processes. The gateway's CPU is read
# from /proc over the timed client's run; its RSS at the end.
source "$(dirname "$0")/lib.sh"
RATE=${LAT_RATE:-200}
SECONDS_=${LAT_SECONDS:-15}
COUNT=$((RATE * SECONDS_))
TIMEOUT=$((SECONDS_ * 3 + 30))

# cpu_seconds PID: user + system CPU seconds the process used so far.
cpu_seconds() {
    python3 -c 'import os,sys; f=open(f"/proc/{sys.argv[1]}/stat").read().rsplit(")",1)[1].split(); print((int(f[11])+int(f[12]))/os.sysconf("SC_CLK_TCK"))' "$1"
}

# fanout CLIENTS TARGET_MS: one run of the flood to CLIENTS clients; the rows for it.
fanout() {
    local clients=$1 target_ms=$2
    start_sim opencode --flood "$COUNT" --flood-rate "$RATE"
    WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-bench-gateway.XXXXXX")"
    SILENT=""
    cleanup() {
        [ -n "$SILENT" ] && kill "$SILENT" 2>/dev/null || true
        kill "${GATEWAY_PID:-}" 2>/dev/null || true; wait "${GATEWAY_PID:-}" 2>/dev/null || true
        stop_sim; rm -rf "$WORK"
    }
    trap cleanup EXIT
    printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$WORK/config.toml"
    echo "bench: gateway fan-out: $COUNT deltas at $RATE/s, tether events then the gateway to $clients clients" >&2
    EVENTS_JSON=$(python3 "$BENCH_DIR/latency.py" --expect "$COUNT" --last "$((COUNT - 1))" --timeout "$TIMEOUT" -- \
        "$BIN" --config "$WORK/config.toml" events --follow -o jsonl) || true
    "$BIN" --config "$WORK/config.toml" serve --listen 127.0.0.1:0 --db "$WORK/gateway.sqlite" >"$WORK/serve.out" 2>"$WORK/serve.err" &
    GATEWAY_PID=$!
    for _ in $(seq 1 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
    URL=$(head -n1 "$WORK/serve.out" | python3 -c 'import json,sys; print(json.load(sys.stdin)["listen"])')
    # The timed client connects first, as soon as the gateway listens, then the silent ones. It
    # asks for live events only, and the flood starts when the gateway subscribes, so it joins a
    # running stream: it is judged on the deltas sent while it was there, every one from the first
    # it saw through the last (latency.py --last), and must have joined within the first 3 s.
    python3 "$BENCH_DIR/latency.py" --expect "$((COUNT - 3 * RATE))" --last "$((COUNT - 1))" --timeout "$TIMEOUT" -- \
        curl -sN "$URL/v1/events" > "$WORK/gateway-latency.json" &
    local timed=$!
    python3 "$BENCH_DIR/silent_clients.py" "$URL" "$((clients - 1))" "$TIMEOUT" 2>"$WORK/silent.err" &
    SILENT=$!
    for _ in $(seq 1 300); do grep -q "connected" "$WORK/silent.err" 2>/dev/null && break; sleep 0.1; done
    local cpu0 wall0 cpu1 wall1
    cpu0=$(cpu_seconds "$GATEWAY_PID"); wall0=$(date +%s.%N)
    wait "$timed" || true
    cpu1=$(cpu_seconds "$GATEWAY_PID"); wall1=$(date +%s.%N)
    local rss peak cpu
    rss=$(awk '/VmRSS/ {print $2}' "/proc/$GATEWAY_PID/status")
    peak=$(awk '/VmHWM/ {print $2}' "/proc/$GATEWAY_PID/status")
    cpu=$(python3 -c 'import sys; c0,c1,w0,w1=map(float,sys.argv[1:]); print(f"{100*(c1-c0)/(w1-w0):.0f}")' "$cpu0" "$cpu1" "$wall0" "$wall1")
    local connected
    connected=$(grep -Eo '[0-9]+ silent SSE clients connected' "$WORK/silent.err" | head -n1 || echo "? silent clients")
    python3 "$BENCH_DIR/gateway.py" fanout-row \
        "gateway: live fan-out to $clients SSE clients, $(commas "$COUNT") deltas at $RATE/s (vs tether events)" \
        "$(cat "$WORK/gateway-latency.json")" "$EVENTS_JSON" "$target_ms" \
        "$connected, held by one process; gateway CPU $cpu % of a core over the run, peak RSS $((peak / 1024)) MB"
    # Judged on the peak RSS: the gateway must stay under 150 MB, not only end under it.
    row "gateway: CPU and RSS during the fan-out to $clients clients" "$cpu % of a core, $((rss / 1024)) MB (peak $((peak / 1024)) MB)" "—" \
        "$cpu %, peak $((peak / 1024)) MB" "< 100 %, < 150 MB" \
        "$([ "$cpu" -lt 100 ] && [ "$peak" -lt $((150 * 1024)) ] && echo yes || echo no)"
    cleanup
    trap - EXIT
}

# CLIENTS:TARGET_MS (added p99) for each run; the contract's 100 clients, and 1,000.
for run in ${FANOUT_RUNS:-100:5 1000:50}; do
    fanout "${run%%:*}" "${run##*:}"
done

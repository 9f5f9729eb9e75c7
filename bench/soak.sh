#!/usr/bin/env bash
# Steady-state memory through an adapter, tether's RSS sampled from /proc every second (soak.py):
# the start is the sample after the warm-up, the end the last one before the stream's last delta.
# Target: growth < 5 MB. No baseline: curl keeps no state to compare.
#   - OpenCode: `tether events --follow -o jsonl` reading SOAK_RATE (5,000) deltas a second for
#     SOAK_WARMUP (10) + SOAK_SECONDS (300) s from the OpenCode simulator's paced flood.
#   - Codex Worker (SOAK_CODEX_WORKER=1, the default): `tether events --turn JOB --follow` on a
#     live job of SOAK_CODEX_RATE (SOAK_RATE) × (warm-up + SOAK_SECONDS) deltas, which the
#     simulator spaces 1/rate apart on average (`--pacing`, fractional milliseconds). The job is
#     started before tether connects, so the simulator keeps 100,000 events (20 s at 5,000/s)
#     for tether to replay from the start, however slowly it starts.
# The samples go to bench/out/soak-opencode.csv and soak-codex-worker.csv.
source "$(dirname "$0")/lib.sh"
RATE=${SOAK_RATE:-5000}
SOAK=${SOAK_SECONDS:-300}
WARMUP=${SOAK_WARMUP:-10}
DURATION=$([ $((SOAK % 60)) = 0 ] && echo "$((SOAK / 60)) min" || echo "$SOAK s")

trap stop_sim EXIT

# --- OpenCode (SOAK_OPENCODE=1, the default).
if [ "${SOAK_OPENCODE:-1}" = 1 ]; then
    COUNT=$((RATE * (SOAK + WARMUP)))
    start_sim opencode --flood "$COUNT" --flood-rate "$RATE"
    CONFIG="$OUT_DIR/opencode-soak.toml"
    printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
    echo "bench: soak, tether events (OpenCode): $(commas "$COUNT") deltas at $RATE/s ($WARMUP s warm-up + $SOAK s)" >&2
    RESULT=$(python3 "$BENCH_DIR/soak.py" --expect "$COUNT" --warmup "$WARMUP" --until "token$((COUNT - 1)) " \
        --timeout $((SOAK + WARMUP + 120)) --csv "$OUT_DIR/soak-opencode.csv" \
        -- "$BIN" --config "$CONFIG" events --follow -o jsonl) || true
    stop_sim
    python3 "$BENCH_DIR/soak.py" row \
        "steady-state memory, \`tether events --follow\` (OpenCode), $DURATION at $(commas "$RATE") deltas/s" "$RESULT"
fi

# --- Codex Worker.
[ "${SOAK_CODEX_WORKER:-1}" = 1 ] || exit 0
CODEX_RATE=${SOAK_CODEX_RATE:-$RATE}
COUNT=$((CODEX_RATE * (SOAK + WARMUP)))
SIM_PACING=$(python3 -c 'import sys; print(1000 / int(sys.argv[1]))' "$CODEX_RATE") start_sim codex-worker --retention 100000
THREAD=$(curl -s -X POST "$SIM_URL/v1/threads" -d '{}' | jq -r .thread.threadId)
JOB=$(curl -s -X POST "$SIM_URL/v1/threads/$THREAD/turns" -d "{\"text\":\"long $COUNT\"}" | jq -r .jobId)
CONFIG="$OUT_DIR/codex-worker-soak.toml"
printf '[profiles.bench]\nbackend = "codex-worker"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
echo "bench: soak, tether events --turn (Codex Worker): $(commas "$COUNT") deltas at $CODEX_RATE/s ($WARMUP s warm-up + $SOAK s)" >&2
RESULT=$(python3 "$BENCH_DIR/soak.py" --expect "$COUNT" --warmup "$WARMUP" --until "\"token$((COUNT - 1)) \"" \
    --match '"part.delta"' --timeout $(((SOAK + WARMUP) * 2 + 120)) --csv "$OUT_DIR/soak-codex-worker.csv" \
    -- "$BIN" --config "$CONFIG" events --turn "$JOB" --follow -o jsonl) || true
ACTUAL=$(python3 -c 'import json, sys; print(format(json.loads(sys.argv[1] or "{}").get("rate_per_s", 0), ",.0f"))' "$RESULT")
python3 "$BENCH_DIR/soak.py" row \
    "steady-state memory, \`tether events --turn --follow\` (Codex Worker), $(commas "$COUNT") deltas at $ACTUAL/s" "$RESULT"

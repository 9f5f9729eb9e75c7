#!/usr/bin/env bash
# Steady-state memory: `tether events --follow -o jsonl` (OpenCode) reading SOAK_RATE (5,000)
# deltas a second for SOAK_WARMUP (10) + SOAK_SECONDS (300) seconds from the OpenCode simulator's
# paced flood. tether's RSS is sampled from /proc every second: the start is the sample after the
# warm-up, the end the last one before the stream's last delta. Target: growth < 5 MB.
# The samples go to bench/out/soak-opencode.csv. No baseline: curl keeps no state to compare.
source "$(dirname "$0")/lib.sh"
RATE=${SOAK_RATE:-5000}
SOAK=${SOAK_SECONDS:-300}
WARMUP=${SOAK_WARMUP:-10}
COUNT=$((RATE * (SOAK + WARMUP)))
LAST="token$((COUNT - 1)) "

start_sim opencode --flood "$COUNT" --flood-rate "$RATE"
trap stop_sim EXIT
CONFIG="$OUT_DIR/opencode-soak.toml"
printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$CONFIG"
echo "bench: soak, tether events (OpenCode): $(commas "$COUNT") deltas at $RATE/s ($WARMUP s warm-up + $SOAK s)" >&2
RESULT=$(python3 "$BENCH_DIR/soak.py" --expect "$COUNT" --warmup "$WARMUP" --until "$LAST" \
    --timeout $((SOAK + WARMUP + 120)) --csv "$OUT_DIR/soak-opencode.csv" \
    -- "$BIN" --config "$CONFIG" events --follow -o jsonl) || true
DURATION=$([ $((SOAK % 60)) = 0 ] && echo "$((SOAK / 60)) min" || echo "$SOAK s")
python3 "$BENCH_DIR/soak.py" row \
    "steady-state memory, \`tether events --follow\` (OpenCode), $DURATION at $(commas "$RATE") deltas/s" "$RESULT"

#!/usr/bin/env bash
# Steady-state memory through an adapter, tether's RSS sampled from /proc every second (soak.py):
# the start is the sample after the warm-up, the end the last one before the stream's last delta.
# Target: growth < 5 MB. No baseline: curl keeps no state to compare.
#   - OpenCode: `tether events --follow -o jsonl` reading SOAK_RATE (5,000) deltas a second for
#     SOAK_WARMUP (10) + SOAK_SECONDS (300) s from the OpenCode simulator's paced flood, churning:
#     every SOAK_TURN (20) deltas are a turn in a new session, with new messages and a new part
#     (`--flood-turns`), so the soak opens tens of thousands of each and the adapter's state for
#     finished turns must be let go of for the memory to stay flat.
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

# The two soaks run at the same time (SOAK_PARALLEL=1, the default), each with its own simulator:
# together they take 5 minutes instead of 10 of `make bench`, and neither's memory depends on
# the other; each row says so. SOAK_PARALLEL=0 runs them one after the other.
PARALLEL=${SOAK_PARALLEL:-1}
[ "$PARALLEL" = 1 ] && [ "${SOAK_OPENCODE:-1}" = 1 ] && [ "${SOAK_CODEX_WORKER:-1}" = 1 ] || PARALLEL=0
ALONGSIDE=""
[ "$PARALLEL" = 1 ] && ALONGSIDE=" (run alongside the other soak)"

# soak_opencode OUT: the OpenCode soak; writes the row's title and soak.py's result to OUT.
soak_opencode() {
    trap stop_sim EXIT
    local count=$((RATE * (SOAK + WARMUP)))
    local turn=${SOAK_TURN:-20}
    start_sim opencode --flood "$count" --flood-rate "$RATE" --flood-turns "$turn"
    local config="$OUT_DIR/opencode-soak.toml"
    printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$config"
    echo "bench: soak, tether events (OpenCode): $(commas "$count") deltas at $RATE/s ($WARMUP s warm-up + $SOAK s), a new session every $turn" >&2
    local result
    result=$(python3 "$BENCH_DIR/soak.py" --expect "$count" --warmup "$WARMUP" --until "token$((count - 1)) " \
        --timeout $((SOAK + WARMUP + 120)) --csv "$OUT_DIR/soak-opencode.csv" \
        -- "$BIN" --config "$config" events --follow -o jsonl) || true
    stop_sim
    printf '%s\n%s\n' "steady-state memory, \`tether events --follow\` (OpenCode), $DURATION at $(commas "$RATE") deltas/s, every $turn deltas a turn in a new session ($(commas $((count / turn))) sessions)$ALONGSIDE" \
        "$result" > "$1"
}

# soak_codex_worker OUT: the Codex Worker soak, the same way.
soak_codex_worker() {
    trap stop_sim EXIT
    local rate=${SOAK_CODEX_RATE:-$RATE}
    local count=$((rate * (SOAK + WARMUP)))
    SIM_PACING=$(python3 -c 'import sys; print(1000 / int(sys.argv[1]))' "$rate") start_sim codex-worker --retention 100000
    local thread job config result actual
    thread=$(curl -s -X POST "$SIM_URL/v1/threads" -d '{}' | jq -r .thread.threadId)
    job=$(curl -s -X POST "$SIM_URL/v1/threads/$thread/turns" -d "{\"text\":\"long $count\"}" | jq -r .jobId)
    config="$OUT_DIR/codex-worker-soak.toml"
    printf '[profiles.bench]\nbackend = "codex-worker"\nurl = "%s"\n' "$SIM_URL" > "$config"
    echo "bench: soak, tether events --turn (Codex Worker): $(commas "$count") deltas at $rate/s ($WARMUP s warm-up + $SOAK s)" >&2
    result=$(python3 "$BENCH_DIR/soak.py" --expect "$count" --warmup "$WARMUP" --until "\"token$((count - 1)) \"" \
        --match '"part.delta"' --timeout $(((SOAK + WARMUP) * 2 + 120)) --csv "$OUT_DIR/soak-codex-worker.csv" \
        -- "$BIN" --config "$config" events --turn "$job" --follow -o jsonl) || true
    stop_sim
    actual=$(python3 -c 'import json, sys; print(format(json.loads(sys.argv[1] or "{}").get("rate_per_s", 0), ",.0f"))' "$result")
    printf '%s\n%s\n' "steady-state memory, \`tether events --turn --follow\` (Codex Worker), $(commas "$count") deltas at $actual/s$ALONGSIDE" \
        "$result" > "$1"
}

OC_OUT="$OUT_DIR/soak-opencode.result"
CW_OUT="$OUT_DIR/soak-codex-worker.result"
rm -f "$OC_OUT" "$CW_OUT"
if [ "$PARALLEL" = 1 ]; then
    soak_opencode "$OC_OUT" &
    OC_JOB=$!
    soak_codex_worker "$CW_OUT" &
    CW_JOB=$!
    wait "$OC_JOB" || true
    wait "$CW_JOB" || true
else
    [ "${SOAK_OPENCODE:-1}" = 1 ] && (soak_opencode "$OC_OUT")
    [ "${SOAK_CODEX_WORKER:-1}" = 1 ] && (soak_codex_worker "$CW_OUT")
fi
# A soak that could not run at all still gets its (failed) row.
[ "${SOAK_OPENCODE:-1}" = 1 ] && [ ! -s "$OC_OUT" ] && printf 'steady-state memory, `tether events --follow` (OpenCode)\n{}\n' > "$OC_OUT"
[ "${SOAK_CODEX_WORKER:-1}" = 1 ] && [ ! -s "$CW_OUT" ] && printf 'steady-state memory, `tether events --turn --follow` (Codex Worker)\n{}\n' > "$CW_OUT"
for out in "$OC_OUT" "$CW_OUT"; do
    [ -s "$out" ] || continue
    python3 "$BENCH_DIR/soak.py" row "$(sed -n 1p "$out")" "$(sed -n 2p "$out")"
done

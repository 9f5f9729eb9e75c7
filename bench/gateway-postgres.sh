#!/usr/bin/env bash
# The gateway's log in PostgreSQL (a fleet's store, README "Running a fleet") under the OpenCode
# simulator's flood: how fast `tether serve --db postgres://…` logs the events, beside a bulk
# INSERT … SELECT of the same rows into a table of the same schema by psql, in the same run. The
# server is a throwaway cluster (Debian's postgresql package, `make test-setup`) on a loopback
# port, with the package's default durability (fsync on, synchronous_commit on).
source "$(dirname "$0")/lib.sh"
EVENTS=${GATEWAY_EVENTS:-100000}
PG_BIN=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)
[ -x "$PG_BIN/initdb" ] || { echo "bench: gateway-postgres needs PostgreSQL's server programs (make test-setup installs postgresql)" >&2; exit 1; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-bench-pg.XXXXXX")"
chmod 755 "$WORK"
PG_DIR="$WORK/pg"
mkdir -p "$PG_DIR"
AS=()
if [ "$(id -u)" = 0 ]; then chown postgres:postgres "$PG_DIR"; AS=(runuser -u postgres --); fi
PG_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"${AS[@]}" "$PG_BIN/initdb" -D "$PG_DIR/data" -U tether -A trust -E UTF8 --no-locale >/dev/null
"${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -l "$PG_DIR/server.log" -w \
    -o "-c listen_addresses=127.0.0.1 -p $PG_PORT -k $PG_DIR" start >/dev/null
psql_() { "$PG_BIN/psql" -h 127.0.0.1 -p "$PG_PORT" -U tether -v ON_ERROR_STOP=1 -At "$@"; }
"$PG_BIN/createdb" -h 127.0.0.1 -p "$PG_PORT" -U tether bench
DB="postgres://tether@127.0.0.1:$PG_PORT/bench"

start_sim opencode --flood "$EVENTS"
printf '[profiles.bench]\nbackend = "opencode"\nurl = "%s"\n' "$SIM_URL" > "$WORK/config.toml"
"$BIN" --config "$WORK/config.toml" serve --listen 127.0.0.1:0 --db "$DB" >"$WORK/serve.out" 2>"$WORK/serve.err" &
GATEWAY_PID=$!
cleanup() {
    kill "$GATEWAY_PID" 2>/dev/null || true; wait "$GATEWAY_PID" 2>/dev/null || true; stop_sim
    "${AS[@]}" "$PG_BIN/pg_ctl" -D "$PG_DIR/data" -m immediate -w stop >/dev/null 2>&1 || true
    rm -rf "$WORK"
}
trap cleanup EXIT
for _ in $(seq 1 100); do [ -s "$WORK/serve.out" ] && break; sleep 0.1; done
[ -s "$WORK/serve.out" ] || { echo "bench: tether serve did not start:" >&2; cat "$WORK/serve.err" >&2; exit 1; }

# The flood is over when the log stops growing (the simulator ends its stream idle).
last=-1
for _ in $(seq 1 600); do
    count=$(psql_ -d bench -c "SELECT count(*) FROM event")
    [ "$count" -ge "$EVENTS" ] && [ "$count" = "$last" ] && break
    last=$count
    sleep 1
done
# The rate from the log itself: its events' receive times, first to last.
IFS='|' read -r logged span <<< "$(psql_ -d bench -c "SELECT count(*), max(ts) - min(ts) FROM event")"
# Beside it: psql bulk-inserting the same rows into a table of the same schema, one statement.
psql_ -d bench -c "CREATE TABLE event_copy (LIKE event INCLUDING ALL)" >/dev/null
began=$(date +%s.%N)
psql_ -d bench -c "INSERT INTO event_copy SELECT * FROM event" >/dev/null
ended=$(date +%s.%N)
BENCH_DIR="$BENCH_DIR" PG_BIN="$PG_BIN" python3 - "$logged" "$span" "$began" "$ended" <<'PY'
import sys, os
sys.path.insert(0, os.environ.get("BENCH_DIR", "."))
import rows
logged, span_ms, began, ended = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
seconds, bulk_seconds = span_ms / 1000, ended - began
rate, bulk_rate = logged / max(seconds, 1e-6), logged / max(bulk_seconds, 1e-6)
rows.add(f"gateway: log {logged:,} flood events into PostgreSQL (OpenCode simulator), a stream's batch a transaction",
         f"{rate:,.0f} events/s", f"psql bulk INSERT … SELECT of the same rows: {bulk_rate:,.0f} rows/s",
         f"{rate / bulk_rate:.2f}×", "≥ 50,000 events/s", rate >= 50_000,
         notes=f"{seconds:.2f} s from the first event received to the last; a throwaway PostgreSQL {os.path.basename(os.path.dirname(os.environ.get('PG_BIN', '/x/x/bin')))} cluster on loopback",
         raw={"events": logged, "seconds": seconds, "bulk_seconds": bulk_seconds})
PY

#!/usr/bin/env bash
# Live end-to-end tests against a real `codex app-server` (openai-codex-cli-bin from PyPI) and a
# local fake Responses API (fake_responses.py), loopback only: tether → CodexMonitor simulator in
# relay mode → codex; then `backend = "codex"` in its three ways (codex-app-server.sh).
# Last line: "N passed, N failed"; exit status non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
LIVE="$ROOT/.build-live"
CODEX_VERSION="0.163.0"
source "$ROOT/Tests/script-support.sh"

mkdir -p "$LIVE"
# 1. codex from PyPI, in a venv (idempotent, quiet).
VENV="$LIVE/venv"
ensure_venv "$VENV" "openai-codex-cli-bin==$CODEX_VERSION" || { fail "pip install openai-codex-cli-bin==$CODEX_VERSION"; finish; }
CODEX="$(find "$VENV" -path '*codex_cli_bin/bin/codex' -type f | head -n 1)"
if [ -n "$CODEX" ] && [ -x "$CODEX" ] && timeout 30 "$CODEX" --version | grep -q "$CODEX_VERSION"; then
    pass "codex binary $("$CODEX" --version)"
else
    fail "no codex $CODEX_VERSION binary in the wheel"; finish
fi

TETHER="${TETHER_BIN:-$(swift build --show-bin-path)/tether}"
[ -x "$TETHER" ] || { fail "tether binary not found at $TETHER (run swift build)"; finish; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-live.XXXXXX")"
PIDS=()
cleanup() {
    declare -F stop_daemon >/dev/null && stop_daemon
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    if [ "$FAILED" -eq 0 ] && [ -z "${KEEP_LIVE:-}" ]; then rm -rf "$WORK"; else echo "logs kept in $WORK"; fi
}
trap cleanup EXIT
WS="$WORK/workspace"
export CODEX_HOME="$WORK/codex-home"
mkdir -p "$WS" "$CODEX_HOME"

wait_for() { # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# 2. The fake model.
python3 "$ROOT/Tests/Live/fake_responses.py" --port-file "$WORK/fake.port" --log "$WORK/requests.jsonl" --patch-path patched.txt \
    >"$WORK/fake.log" 2>&1 &
PIDS+=($!)
wait_for 10 test -s "$WORK/fake.port" || { fail "fake Responses API did not start"; finish; }
FAKE_PORT="$(cat "$WORK/fake.port")"

cat >"$CODEX_HOME/config.toml" <<TOML
model = "fake-model"
model_provider = "fake"
approval_policy = "on-request"
sandbox_mode = "read-only"   # so that a patch asks too (an escalated command always asks)

[model_providers.fake]
name = "Fake"
base_url = "http://127.0.0.1:$FAKE_PORT/v1"
wire_api = "responses"
TOML

# 3. The CodexMonitor simulator relaying to the real codex.
"$TETHER" simulate codexmonitor --listen 127.0.0.1:0 --token t --relay-codex "$CODEX" \
    --codex-home "$CODEX_HOME" --workspace-dir "$WS" >"$WORK/sim.out" 2>"$WORK/sim.err" &
PIDS+=($!)
wait_for 20 grep -q ':' "$WORK/sim.out" || { cat "$WORK/sim.err"; fail "simulator did not start"; finish; }
ADDRESS="$(head -n 1 "$WORK/sim.out")"

export TETHER_CONFIG="$WORK/tether.toml"
cat >"$TETHER_CONFIG" <<TOML
default_profile = "live"

[profiles.live]
backend = "codexmonitor"
address = "$ADDRESS"
token = { file = "$WORK/token" }
workspace = "ws-1"
TOML
printf 't' >"$WORK/token"
chmod 600 "$WORK/token" "$TETHER_CONFIG"

# 4. A session.
timeout 60 "$TETHER" -o jsonl sessions create --title live >"$WORK/create.jsonl" 2>"$WORK/create.err"
SESSION="$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    l=l.strip()
    if not l: continue
    o=json.loads(l)
    s=o.get("session") or o.get("id") or (o.get("data") or {}).get("id")
    if s: print(s); break' "$WORK/create.jsonl" 2>/dev/null)"
if [ -n "$SESSION" ]; then pass "sessions create → $SESSION"; else
    cat "$WORK/create.jsonl" "$WORK/create.err"; fail "sessions create"; finish; fi

# 5. A plain streamed reply.
timeout 90 "$TETHER" -o jsonl send "$SESSION" "say hello" --follow >"$WORK/hello.jsonl" 2>"$WORK/hello.err"
RC=$?
if [ "$RC" -eq 0 ] && grep -q '"type":"part.delta"' "$WORK/hello.jsonl" \
    && grep '"type":"turn.completed"' "$WORK/hello.jsonl" | grep -q '"status":"completed"' \
    && grep '"type":"part.completed"' "$WORK/hello.jsonl" | grep -q 'I say hello'; then
    pass "send \"say hello\" --follow streamed a reply and completed"
else
    tail -n 20 "$WORK/hello.jsonl" "$WORK/hello.err"; fail "send \"say hello\" --follow (exit $RC)"
fi

# 6. A command that needs approval.
timeout 120 "$TETHER" -o jsonl send "$SESSION" "run the command" --follow >"$WORK/run.jsonl" 2>"$WORK/run.err" &
SEND_PID=$!
if wait_for 60 grep -q '"type":"approval.requested"' "$WORK/run.jsonl"; then
    pass "approval.requested arrived"
    APPROVAL="$(python3 -c 'import json,sys
for l in open(sys.argv[1]):
    o=json.loads(l)
    if o.get("type")=="approval.requested":
        d=o.get("data") or {}
        print(d.get("id") or d.get("approval") or o.get("approval") or ""); break' "$WORK/run.jsonl")"
    if timeout 30 "$TETHER" -o jsonl approve "$APPROVAL" --decision accept >"$WORK/approve.jsonl" 2>"$WORK/approve.err"; then
        pass "approve $APPROVAL --decision accept"
    else
        cat "$WORK/approve.jsonl" "$WORK/approve.err"; fail "approve $APPROVAL"
    fi
else
    tail -n 20 "$WORK/run.jsonl" "$WORK/run.err"; fail "no approval.requested within 60 s"
fi
wait "$SEND_PID"
RC=$?
if [ "$RC" -eq 0 ] && grep '"type":"turn.completed"' "$WORK/run.jsonl" | grep -q '"status":"completed"'; then
    pass "send \"run the command\" --follow completed"
else
    tail -n 20 "$WORK/run.jsonl" "$WORK/run.err"; fail "send \"run the command\" --follow (exit $RC)"
fi
if [ -f "$WS/done.txt" ] && grep -q hi "$WS/done.txt"; then
    pass "the approved command ran (done.txt in the workspace)"
else
    fail "done.txt missing in $WS"
fi

source "$ROOT/Tests/Live/codex-app-server.sh"
finish

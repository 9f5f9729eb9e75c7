# Sourced by codex-live.sh: `backend = "codex"` against the same real codex and fake model, in
# its three ways — a ws:// listener with a capability token, the app-server daemon reached
# through a real sshd's exec channel (`codex app-server proxy`), and a stdio child under
# `tether serve` — with approvals answered from fresh processes, decline, cancel, abort, the
# link cut mid-turn and while an approval waits, and the gateway restarting a killed child.

# first_id FILE TYPE: the data.id (or the session) of the first TYPE event in a JSONL file.
first_id() {
    python3 - "$1" "$2" <<'PY' 2>/dev/null
import json, sys
for line in open(sys.argv[1]):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("type") == sys.argv[2]:
        print((event.get("data") or {}).get("id") or event.get("session") or "")
        break
PY
}

# count FILE TYPE [JQ-ish KEY=VALUE on data]: how many TYPE events (whose data.KEY is VALUE).
count() {
    python3 - "$@" <<'PY' 2>/dev/null
import json, sys
path, kind = sys.argv[1], sys.argv[2]
key, _, value = (sys.argv[3] if len(sys.argv) > 3 else "").partition("=")
n = 0
for line in open(path):
    try:
        event = json.loads(line)
    except ValueError:
        continue
    if event.get("type") == kind and (not key or str((event.get("data") or {}).get(key)) == value):
        n += 1
print(n)
PY
}

# at_least N FILE TYPE [KEY=VALUE]: whether FILE has N such events yet (for wait_for).
at_least() { local n=$1; shift; [ "$(count "$@")" -ge "$n" ]; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# approve_from_fresh PROFILE FOLLOW_FILE DECISION NAME: waits for the follower's approval.requested,
# answers it from a new tether process, and passes or fails NAME.
approve_from_fresh() {
    local profile=$1 file=$2 decision=$3 name=$4 approval
    if ! wait_for 60 grep -q '"type":"approval.requested"' "$file"; then
        tail -n 5 "$file"; fail "$name: no approval.requested"; return 1
    fi
    approval="$(first_id "$file" approval.requested)"
    if timeout 60 "$TETHER" -p "$profile" -o jsonl approve "$approval" --decision "$decision" >"$file.approve" 2>&1 \
        && grep -q "\"decision\":\"$decision\"" "$file.approve"; then
        return 0
    fi
    cat "$file.approve"; fail "$name: approve $approval --decision $decision"; return 1
}

# follow PROFILE SESSION PROMPT OUT: `send --follow` in the background; its pid in FOLLOWER.
follow() {
    timeout 120 "$TETHER" -p "$1" -o jsonl send "$2" "$3" --follow >"$4" 2>"$4.err" &
    FOLLOWER=$!
}

# --- 1. ws:// with a capability token ---------------------------------------------------------
WS_PORT="$(free_port)"
printf 'capability-%s\n' "$RANDOM$RANDOM" >"$WORK/ws-token"
chmod 600 "$WORK/ws-token"
"$CODEX" app-server --listen "ws://127.0.0.1:$WS_PORT" --ws-auth capability-token --ws-token-file "$WORK/ws-token" \
    >"$WORK/ws-server.log" 2>&1 &
PIDS+=($!)
wait_for 20 curl -sf "http://127.0.0.1:$WS_PORT/readyz" -o /dev/null || fail "codex app-server --listen ws:// did not start"
python3 "$ROOT/Tests/Live/cut_proxy.py" --target "127.0.0.1:$WS_PORT" --port-file "$WORK/proxy.port" --cut "$WORK/cut" &
PIDS+=($!)
wait_for 10 test -s "$WORK/proxy.port" || fail "the cutting proxy did not start"
PROXY_PORT="$(cat "$WORK/proxy.port")"
printf 'wrong\n' >"$WORK/wrong-token"
chmod 600 "$WORK/wrong-token"
cat >>"$TETHER_CONFIG" <<TOML

[profiles.ws]
backend = "codex"
url = "ws://127.0.0.1:$WS_PORT"
token = { file = "$WORK/ws-token" }
directory = "$WS"

[profiles.ws-cut]
backend = "codex"
url = "ws://127.0.0.1:$PROXY_PORT"
token = { file = "$WORK/ws-token" }
directory = "$WS"

[profiles.ws-wrong]
backend = "codex"
url = "ws://127.0.0.1:$WS_PORT"
token = { file = "$WORK/wrong-token" }
TOML

timeout 30 "$TETHER" -p ws-wrong check >"$WORK/wrong.out" 2>&1
RC=$?
if [ "$RC" -eq 77 ] && grep -q "refused the token" "$WORK/wrong.out"; then pass "codex ws: a wrong token is refused (exit 77)"; else
    cat "$WORK/wrong.out"; fail "codex ws: wrong token gave exit $RC"; fi

CS="$(timeout 60 "$TETHER" -p ws -o jsonl sessions create --title codex-ws 2>"$WORK/cs.err" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session"])' 2>/dev/null)"
if [ -n "$CS" ]; then pass "codex ws: sessions create → $CS"; else cat "$WORK/cs.err"; fail "codex ws: sessions create"; fi

timeout 60 "$TETHER" -p ws -o jsonl send "$CS" "say hello" --follow >"$WORK/ws-hello.jsonl" 2>"$WORK/ws-hello.err"
if grep '"type":"part.completed"' "$WORK/ws-hello.jsonl" | grep -q '"text":"Hello! I am the fake model and I say hello."' \
    && [ "$(count "$WORK/ws-hello.jsonl" turn.completed status=completed)" = 1 ]; then
    pass "codex ws: a turn streamed its exact text and completed once"
else tail -n 5 "$WORK/ws-hello.jsonl" "$WORK/ws-hello.err"; fail "codex ws: say hello"; fi

rm -f "$WS/done.txt"
follow ws "$CS" "run the command" "$WORK/ws-run.jsonl"
approve_from_fresh ws "$WORK/ws-run.jsonl" accept "codex ws: command approval"
wait "$FOLLOWER"
if [ "$(count "$WORK/ws-run.jsonl" turn.completed status=completed)" = 1 ] && grep -q hi "$WS/done.txt" 2>/dev/null; then
    pass "codex ws: a command approval answered from a fresh process ran the command"
else tail -n 5 "$WORK/ws-run.jsonl"; fail "codex ws: command approval"; fi

rm -f "$WS/patched.txt"
follow ws "$CS" "patch the file" "$WORK/ws-patch.jsonl"
approve_from_fresh ws "$WORK/ws-patch.jsonl" accept "codex ws: file-change approval"
wait "$FOLLOWER"
if grep '"type":"approval.requested"' "$WORK/ws-patch.jsonl" | grep -q '"kind":"file_change"' \
    && grep '"type":"approval.requested"' "$WORK/ws-patch.jsonl" | grep -q 'hello from apply_patch' \
    && [ -f "$WS/patched.txt" ] && [ "$(count "$WORK/ws-patch.jsonl" turn.completed status=completed)" = 1 ]; then
    pass "codex ws: a file-change approval showed its diff and, accepted from a fresh process, wrote the file"
else tail -n 5 "$WORK/ws-patch.jsonl"; fail "codex ws: file-change approval"; fi

rm -f "$WS/done.txt"
follow ws "$CS" "run the command" "$WORK/ws-decline.jsonl"
approve_from_fresh ws "$WORK/ws-decline.jsonl" decline "codex ws: decline"
wait "$FOLLOWER"
if [ "$(count "$WORK/ws-decline.jsonl" turn.completed status=completed)" = 1 ] && [ ! -f "$WS/done.txt" ] \
    && grep '"type":"part.completed"' "$WORK/ws-decline.jsonl" | grep -q '"status":"declined"'; then
    pass "codex ws: decline: the command did not run and the turn went on to complete"
else tail -n 5 "$WORK/ws-decline.jsonl"; fail "codex ws: decline"; fi

follow ws "$CS" "run the command" "$WORK/ws-cancel.jsonl"
approve_from_fresh ws "$WORK/ws-cancel.jsonl" cancel "codex ws: cancel"
wait "$FOLLOWER"
if [ "$(count "$WORK/ws-cancel.jsonl" turn.completed status=cancelled)" = 1 ] && [ ! -f "$WS/done.txt" ]; then
    pass "codex ws: cancel ended the turn cancelled"
else tail -n 5 "$WORK/ws-cancel.jsonl"; fail "codex ws: cancel"; fi

# Abort from a fresh process while a slow reply streams.
follow ws "$CS" "a slow answer please" "$WORK/ws-abort.jsonl"
if wait_for 30 grep -q '"type":"part.delta"' "$WORK/ws-abort.jsonl" \
    && timeout 30 "$TETHER" -p ws abort "$CS" >"$WORK/abort.out" 2>&1; then
    wait "$FOLLOWER"
    if [ "$(count "$WORK/ws-abort.jsonl" turn.completed status=cancelled)" = 1 ]; then pass "codex ws: abort from a fresh process cancelled the turn"
    else tail -n 3 "$WORK/ws-abort.jsonl"; fail "codex ws: abort: no cancelled turn"; fi
else cat "$WORK/abort.out"; kill "$FOLLOWER" 2>/dev/null; fail "codex ws: abort"; fi

# The link cut mid-turn: the stream reconnects, the reply completes whole, once.
follow ws-cut "$CS" "a slow answer please" "$WORK/cut-mid.jsonl"
if wait_for 30 grep -q '"type":"part.delta"' "$WORK/cut-mid.jsonl"; then
    touch "$WORK/cut"
    wait "$FOLLOWER"
    if [ "$(count "$WORK/cut-mid.jsonl" connection.state state=connected)" -ge 2 ] \
        && [ "$(count "$WORK/cut-mid.jsonl" turn.completed status=completed)" = 1 ] \
        && grep '"type":"part.completed"' "$WORK/cut-mid.jsonl" | grep -q 'the fake model answers your slow request now.' \
        && [ "$(count "$WORK/cut-mid.jsonl" part.completed role=assistant)" = 1 ]; then
        pass "codex ws: the link cut mid-turn: reconnected, the reply completed whole and once"
    else tail -n 8 "$WORK/cut-mid.jsonl" "$WORK/cut-mid.jsonl.err"; fail "codex ws: link cut mid-turn"; fi
else kill "$FOLLOWER" 2>/dev/null; fail "codex ws: link cut mid-turn: nothing streamed"; fi

# The link cut while an approval waits: it survives (ws), comes back once, is answered.
rm -f "$WS/done.txt"
follow ws-cut "$CS" "run the command" "$WORK/cut-approval.jsonl"
if wait_for 60 grep -q '"type":"approval.requested"' "$WORK/cut-approval.jsonl"; then
    touch "$WORK/cut"
    wait_for 30 at_least 2 "$WORK/cut-approval.jsonl" connection.state state=connected
    approve_from_fresh ws "$WORK/cut-approval.jsonl" accept "codex ws: approval after a cut"
    wait "$FOLLOWER"
    if [ "$(count "$WORK/cut-approval.jsonl" approval.requested)" = 1 ] \
        && [ "$(count "$WORK/cut-approval.jsonl" turn.completed status=completed)" = 1 ] && [ -f "$WS/done.txt" ]; then
        pass "codex ws: the link cut while an approval waited: asked once, answered, the turn completed once"
    else tail -n 8 "$WORK/cut-approval.jsonl"; fail "codex ws: link cut while an approval waited"; fi
else kill "$FOLLOWER" 2>/dev/null; fail "codex ws: no approval before the cut"; fi

# --- 2. The daemon, through a real sshd's exec channel ----------------------------------------
SSHD_DIR="$WORK/sshd"
mkdir -p "$SSHD_DIR" /run/sshd 2>/dev/null
ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/host_key" && ssh-keygen -q -t ed25519 -N '' -f "$SSHD_DIR/client_key"
cp "$SSHD_DIR/client_key.pub" "$SSHD_DIR/authorized_keys"
SSHD_PORT="$(free_port)"
cat >"$SSHD_DIR/sshd_config" <<CONF
ListenAddress 127.0.0.1
Port $SSHD_PORT
HostKey $SSHD_DIR/host_key
PidFile none
AuthorizedKeysFile $SSHD_DIR/authorized_keys
StrictModes no
UsePAM no
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AllowTcpForwarding no
SetEnv CODEX_HOME=$CODEX_HOME
CONF
echo "[127.0.0.1]:$SSHD_PORT $(cut -d' ' -f1,2 "$SSHD_DIR/host_key.pub")" >"$SSHD_DIR/known_hosts"
/usr/sbin/sshd -D -e -f "$SSHD_DIR/sshd_config" >"$SSHD_DIR/sshd.log" 2>&1 &
PIDS+=($!)
timeout 60 "$CODEX" app-server daemon start >"$WORK/daemon.log" 2>&1 || fail "codex app-server daemon start"
stop_daemon() {
    CODEX_HOME="$CODEX_HOME" timeout 30 "$CODEX" app-server daemon stop >/dev/null 2>&1
    pkill -f "$CODEX_HOME/packages/app-server-daemon" 2>/dev/null
}
cat >>"$TETHER_CONFIG" <<TOML

[tunnels.box]
host = "127.0.0.1"
port = $SSHD_PORT
user = "$(id -un)"
identity = "$SSHD_DIR/client_key"
known_hosts = "$SSHD_DIR/known_hosts"

[profiles.daemon]
backend = "codex"
daemon = true
directory = "$WS"

[profiles.remote-daemon]
backend = "codex"
daemon = true
codex = "$CODEX"
tunnel = "box"
directory = "$WS"
TOML
if timeout 30 "$TETHER" -p daemon check >"$WORK/daemon-check.json" 2>&1 && grep -q '"reachable":true' "$WORK/daemon-check.json"; then
    pass "codex daemon: reached on its socket under CODEX_HOME"
else cat "$WORK/daemon-check.json"; fail "codex daemon: check"; fi
DS="$(timeout 60 "$TETHER" -p remote-daemon -o jsonl sessions create --title codex-daemon 2>"$WORK/ds.err" | python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["session"])' 2>/dev/null)"
if [ -n "$DS" ]; then pass "codex daemon via sshd exec: sessions create → $DS"; else cat "$WORK/ds.err"; fail "codex daemon via sshd exec: sessions create"; fi
rm -f "$WS/done.txt"
follow remote-daemon "$DS" "run the command" "$WORK/daemon-run.jsonl"
approve_from_fresh remote-daemon "$WORK/daemon-run.jsonl" accept "codex daemon via sshd exec: approval"
wait "$FOLLOWER"
if [ "$(count "$WORK/daemon-run.jsonl" turn.completed status=completed)" = 1 ] && [ -f "$WS/done.txt" ]; then
    pass "codex daemon via sshd exec: a turn with a command approval answered from a fresh process"
else tail -n 5 "$WORK/daemon-run.jsonl" "$WORK/daemon-run.jsonl.err"; fail "codex daemon via sshd exec: approval turn"; fi
stop_daemon

# --- 3. A stdio child under tether serve --------------------------------------------------------
cat >>"$TETHER_CONFIG" <<TOML

[profiles.stdio]
backend = "codex"
command = ["$CODEX", "app-server"]
directory = "$WS"
TOML
timeout 30 "$TETHER" -p stdio approve "x~0~cmd~t~i" >"$WORK/stdio-approve.out" 2>&1
RC=$?
if [ "$RC" -eq 64 ] && grep -q "serve" "$WORK/stdio-approve.out"; then
    pass "codex stdio: approve from a one-shot process says why not and names tether serve"
else cat "$WORK/stdio-approve.out"; fail "codex stdio: approve gave exit $RC"; fi
"$TETHER" serve -p stdio --listen 127.0.0.1:0 --db "$WORK/gateway.sqlite" >"$WORK/serve.out" 2>"$WORK/serve.err" &
SERVE_PID=$!
PIDS+=($SERVE_PID)
wait_for 30 grep -q listen "$WORK/serve.out" || { cat "$WORK/serve.err"; fail "tether serve did not start"; }
GW="$(python3 -c 'import json,sys; print(json.loads(open(sys.argv[1]).readline())["listen"])' "$WORK/serve.out")"
# gw_at_least N TYPE [KEY=VALUE]: whether the gateway's log has N such events of session $SS (or,
# for connection.state, of the link).
gw_at_least() {
    curl -s "$GW/v1/events?format=json&since=0" >"$WORK/gw-events.json"
    python3 - "$WORK/gw-events.json" "$SS" "$@" <<'PY'
import json, sys
events = json.load(open(sys.argv[1]))["events"]
session, n, kind = sys.argv[2], int(sys.argv[3]), sys.argv[4]
key, _, value = (sys.argv[5] if len(sys.argv) > 5 else "").partition("=")
found = sum(1 for e in events if e["type"] == kind and (kind == "connection.state" or e.get("session") == session)
            and (not key or str((e.get("data") or {}).get(key)) == value))
sys.exit(0 if found >= n else 1)
PY
}
SS="$(curl -s -X POST -H 'content-type: application/json' -d '{"title":"codex-stdio"}' "$GW/v1/profiles/stdio/sessions" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])' 2>/dev/null)"
rm -f "$WS/done.txt"
curl -s -X POST -H 'content-type: application/json' -d '{"text":"run the command"}' "$GW/v1/profiles/stdio/sessions/$SS/turns" >/dev/null
wait_for 60 gw_at_least 1 approval.requested
SA="$(python3 -c 'import json,sys; print([e for e in json.load(open(sys.argv[1]))["events"] if e["type"]=="approval.requested" and e.get("session")==sys.argv[2]][0]["data"]["id"])' "$WORK/gw-events.json" "$SS" 2>/dev/null)"
curl -s -X POST -H 'content-type: application/json' -d '{"decision":"accept"}' "$GW/v1/profiles/stdio/approvals/$SA" >"$WORK/gw-approve.json"
if wait_for 60 gw_at_least 1 turn.completed status=completed && [ -f "$WS/done.txt" ]; then
    pass "codex stdio under tether serve: a turn, its approval answered through the gateway"
else cat "$WORK/gw-approve.json"; tail -n 5 "$WORK/serve.err"; fail "codex stdio under tether serve: approval turn"; fi
CHILD="$(pgrep -P "$SERVE_PID" -f "app-server" | head -n 1)"
if [ -n "$CHILD" ] && kill -9 "$CHILD" && wait_for 30 gw_at_least 2 connection.state state=connected; then
    curl -s -X POST -H 'content-type: application/json' -d '{"text":"say hello"}' "$GW/v1/profiles/stdio/sessions/$SS/turns" >"$WORK/gw-send2.json"
    if wait_for 60 gw_at_least 2 turn.completed status=completed; then
        pass "codex stdio under tether serve: the child killed, the gateway started another and the thread went on"
    else cat "$WORK/gw-send2.json"; tail -n 5 "$WORK/serve.err"; fail "codex stdio: no turn after the restart"; fi
else tail -n 5 "$WORK/serve.err"; fail "codex stdio: the gateway did not restart its child (child $CHILD)"; fi

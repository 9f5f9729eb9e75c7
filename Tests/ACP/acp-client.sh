#!/usr/bin/env bash
# `tether acp` against a real ACP client: PyPI's agent-client-protocol (the Python implementation
# of ACP), driving `tether acp -p PROFILE` against each agent simulator (OpenCode, Codex Worker,
# codex, CodexMonitor, OpenCode 2.x, and OpenCode through a `tether serve` as a `gateway` profile) as an editor would (acp_driver.py). Loopback only; PyPI is the only download.
# Last line: "N passed, N failed"; exit status non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
BUILD="$ROOT/.build-acp"
ACP_VERSION="0.12.1"
source "$ROOT/Tests/script-support.sh"

mkdir -p "$BUILD"
# 1. The client library from PyPI, in a venv (idempotent, quiet).
VENV="$BUILD/venv"
ensure_venv "$VENV" "agent-client-protocol==$ACP_VERSION" || { fail "pip install agent-client-protocol==$ACP_VERSION"; finish; }
pass "agent-client-protocol $ACP_VERSION installed in $VENV"

TETHER="${TETHER_BIN:-$(swift build --show-bin-path)/tether}"
[ -x "$TETHER" ] || { fail "tether binary not found at $TETHER (run swift build)"; finish; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-acp.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    if [ "$FAILED" -eq 0 ] && [ -z "${KEEP_ACP:-}" ]; then rm -rf "$WORK"; else echo "logs kept in $WORK"; fi
}
trap cleanup EXIT

wait_for() { # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
}

# 2. The simulators, each with a secret the profiles read from a file (it must never be printed).
start_sim() { # start_sim NAME BACKEND SECRET [SIMULATOR ARGS...]
    printf '%s' "$3" >"$WORK/$1.secret"
    chmod 600 "$WORK/$1.secret"
    "$TETHER" simulate "$2" --listen 127.0.0.1:0 --pacing 5 --token "$3" "${@:4}" >"$WORK/$1.out" 2>"$WORK/$1.err" &
    PIDS+=($!)
    wait_for 20 grep -qs ':' "$WORK/$1.out" || { cat "$WORK/$1.err"; fail "$2 simulator did not start"; finish; }
}
OC_SECRET="oc-pw-$RANDOM$RANDOM"
CW_SECRET="cw-token-$RANDOM$RANDOM"
CM_SECRET="cm-token-$RANDOM$RANDOM"
CX_SECRET="cx-token-$RANDOM$RANDOM"
start_sim oc opencode "$OC_SECRET"
start_sim oc2 opencode "$OC_SECRET" --generation 2
start_sim cx codex "$CX_SECRET"
start_sim cw codex-worker "$CW_SECRET"
start_sim cm codexmonitor "$CM_SECRET"

# A gateway over the OpenCode simulator: the `gw` profile drives it through `tether serve`.
cat >"$WORK/serve.toml" <<TOML
[profiles.oc]
backend = "opencode"
url = "$(head -n 1 "$WORK/oc.out")"
password = { file = "$WORK/oc.secret" }
TOML
chmod 600 "$WORK/serve.toml"
"$TETHER" --config "$WORK/serve.toml" serve --listen 127.0.0.1:0 --db "$WORK/gateway.sqlite" >"$WORK/gw.out" 2>"$WORK/gw.err" &
PIDS+=($!)
wait_for 20 grep -qs '"listen"' "$WORK/gw.out" || { cat "$WORK/gw.err"; fail "tether serve did not start"; finish; }
GW_URL="$(sed -n 's/.*"listen":"\([^"]*\)".*/\1/p' "$WORK/gw.out" | head -n 1)"

CONFIG="$WORK/tether.toml"
cat >"$CONFIG" <<TOML
[profiles.oc]
backend = "opencode"
url = "$(head -n 1 "$WORK/oc.out")"
password = { file = "$WORK/oc.secret" }

# OpenCode 2.x (its /api/* wire, told apart at connect; the same profile keys).
[profiles.oc2]
backend = "opencode"
url = "$(head -n 1 "$WORK/oc2.out")"
password = { file = "$WORK/oc2.secret" }

[profiles.cw]
backend = "codex-worker"
url = "$(head -n 1 "$WORK/cw.out")"
token = { file = "$WORK/cw.secret" }

[profiles.cx]
backend = "codex"
url = "$(head -n 1 "$WORK/cx.out")"
token = { file = "$WORK/cx.secret" }

[profiles.cm]
backend = "codexmonitor"
address = "$(head -n 1 "$WORK/cm.out")"
token = { file = "$WORK/cm.secret" }
workspace = "ws-1"

# No workspace: session/new looks for the one whose path is the editor's cwd.
[profiles.cm-any]
backend = "codexmonitor"
address = "$(head -n 1 "$WORK/cm.out")"
token = { file = "$WORK/cm.secret" }

[profiles.gw]
backend = "gateway"
url = "$GW_URL"
remote_profile = "oc"

# Nothing listens on port 9 (discard) on loopback: a backend that is down.
[profiles.oc-down]
backend = "opencode"
url = "http://127.0.0.1:9"
TOML
chmod 600 "$CONFIG"
mkdir -p "$WORK/project"

# 3. One editor session per backend. The prompts pick each simulator's scripted turns: a plain
# reply, a command behind an approval, and (CodexMonitor) a turn that streams until interrupted.
drive() { # drive PROFILE BACKEND SECRET PLAIN APPROVAL CANCEL FAIL [DRIVER ARGS...]
    mkdir -p "$WORK/logs-$1"
    timeout 240 "$VENV/bin/python" "$ROOT/Tests/ACP/acp_driver.py" --tether "$TETHER" --config "$CONFIG" \
        --profile "$1" --backend "$2" --cwd "$WORK/project" --logs "$WORK/logs-$1" --secret "$3" \
        --plain "$4" --approval "$5" --cancel "$6" --fail "$7" "${@:8}" >"$WORK/driver-$1.out" 2>"$WORK/driver-$1.err"
    local status=$?
    while IFS= read -r line; do
        case "$line" in
            PASS:*) pass "${line#PASS: }" ;;
            FAIL:*) fail "${line#FAIL: }" ;;
        esac
    done <"$WORK/driver-$1.out"
    if [ "$status" -ne 0 ] && ! grep -q '^FAIL:' "$WORK/driver-$1.out"; then
        tail -n 20 "$WORK/driver-$1.err"; fail "[$2] the driver exited $status"
    fi
}
START=$SECONDS
drive oc opencode "$OC_SECRET" "say hello" "run rm build" "run rm build" "this will fail" --dead-profile oc-down \
    --question "ask me which dir" --question-answer dist
drive oc2 opencode "$OC_SECRET" "say hello" "run rm build" "run rm build" "this will fail" \
    --question "ask me which dir" --question-answer dist
drive cw codex-worker "$CW_SECRET" "say hello" "run the command" "run the command" "this will fail"
drive cx codex "$CX_SECRET" "say hello" "cmd please" "cmd please" "fail please" --question "question please" --question-answer right
drive gw gateway "$OC_SECRET" "say hello" "run rm build" "run rm build" "this will fail"
drive cm codexmonitor "$CM_SECRET" "say hello" "run the tests" "please wait" "this will fail" --refusing-profile cm-any
echo "ran in $((SECONDS - START)) s"
finish

#!/usr/bin/env bash
# The gateway's OpenAPI document against the gateway itself: the document `GET /v1/openapi.json`
# serves is validated with openapi-spec-validator, then schemathesis (both from PyPI, in a venv
# under .build-gateway-venv) sends generated requests to a live `tether serve` over the OpenCode
# simulator, for a bounded budget, and checks every response against the document: no 5xx
# (but 501/502/504, which the document promises for backend limits and failures), documented
# status codes, content types and schemas. Loopback only.
# Last line: "N passed, N failed"; exit status non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
VENV="$ROOT/.build-gateway-venv"
SCHEMATHESIS_VERSION="4.32.5"
VALIDATOR_VERSION="0.9.0"
MAX_EXAMPLES="${GATEWAY_API_EXAMPLES:-25}"
source "$ROOT/Tests/script-support.sh"

# 1. The tools, from PyPI (idempotent, quiet).
ensure_venv "$VENV" "schemathesis==$SCHEMATHESIS_VERSION" "openapi-spec-validator==$VALIDATOR_VERSION" \
    || { fail "pip install schemathesis openapi-spec-validator"; finish; }

TETHER="${TETHER_BIN:-$(swift build --show-bin-path)/tether}"
[ -x "$TETHER" ] || { fail "tether binary not found at $TETHER (run swift build)"; finish; }

WORK="$(mktemp -d "${TMPDIR:-/tmp}/tether-gateway-api.XXXXXX")"
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null; done
    for pid in "${PIDS[@]}"; do wait "$pid" 2>/dev/null; done
    if [ "$FAILED" -eq 0 ] && [ -z "${KEEP_GATEWAY_API:-}" ]; then rm -rf "$WORK"; else echo "logs kept in $WORK"; fi
}
trap cleanup EXIT

first_line() { # first_line FILE SECONDS: waits for the first line of FILE
    local deadline=$((SECONDS + $2))
    until [ -s "$1" ] && head -n 1 "$1" | grep -q .; do
        [ "$SECONDS" -ge "$deadline" ] && return 1
        sleep 0.1
    done
    head -n 1 "$1"
}

# 2. An OpenCode simulator and a gateway over it (no token: loopback only, open API).
"$TETHER" simulate opencode --listen 127.0.0.1:0 --pacing 1 >"$WORK/sim.out" 2>"$WORK/sim.err" &
PIDS+=($!)
SIM_URL="$(first_line "$WORK/sim.out" 30)" || { cat "$WORK/sim.err"; fail "the OpenCode simulator did not start"; finish; }
cat >"$WORK/config.toml" <<TOML
[profiles.oc]
backend = "opencode"
url = "$SIM_URL"
TOML
chmod 600 "$WORK/config.toml"
"$TETHER" --config "$WORK/config.toml" serve --listen 127.0.0.1:0 --db "$WORK/gateway.sqlite" >"$WORK/serve.out" 2>"$WORK/serve.err" &
GATEWAY_PID=$!
PIDS+=($GATEWAY_PID)
LINE="$(first_line "$WORK/serve.out" 30)" || { cat "$WORK/serve.err"; fail "tether serve did not print its first line"; finish; }
URL="$(printf '%s' "$LINE" | jq -r .listen)"
pass "tether serve is up at $URL"

# 3. The served document is valid OpenAPI 3.1.
if curl -sf "$URL/v1/openapi.json" -o "$WORK/openapi.json" && \
   "$VENV/bin/openapi-spec-validator" "$WORK/openapi.json" >"$WORK/validator.log" 2>&1; then
    pass "openapi-spec-validator: $(jq -r '.openapi' "$WORK/openapi.json") document with $(jq '.paths | length' "$WORK/openapi.json") paths"
else
    cat "$WORK/validator.log"; fail "openapi-spec-validator on GET /v1/openapi.json"
fi
# The served document is the committed file, byte for byte (it is embedded at build time).
if cmp -s "$WORK/openapi.json" "$ROOT/Sources/TetherGateway/Page/openapi.json"; then
    pass "GET /v1/openapi.json is Sources/TetherGateway/Page/openapi.json byte for byte"
else
    fail "GET /v1/openapi.json differs from Sources/TetherGateway/Page/openapi.json (rebuild the binary?)"
fi

# 4. Schemathesis against the live gateway, with the real profile and a real session as the path
# parameters (random ones would only ever reach the 404 of an unknown profile). /v1/events is left out: without format=json it is an
# endless SSE stream, which the end-to-end tests (GatewayCLITests) cover instead.
SESSION="$(curl -sf -X POST -H 'Content-Type: application/json' -d '{"title":"api-check"}' "$URL/v1/profiles/oc/sessions" | jq -r .id)"
[ -n "$SESSION" ] && [ "$SESSION" != null ] || { fail "POST /v1/profiles/oc/sessions gave no session"; finish; }
cat >"$WORK/schemathesis.toml" <<TOML
[parameters]
"path.profile" = "oc"
"path.session" = "$SESSION"
TOML
# From $WORK: schemathesis keeps a cache (.schemathesis/) in its working directory.
if (cd "$WORK" && timeout 300 "$VENV/bin/schemathesis" --config-file "$WORK/schemathesis.toml" run "$WORK/openapi.json" --url "$URL" \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance \
        --exclude-path /v1/events --max-examples "$MAX_EXAMPLES" --request-timeout 10 \
        --phases examples,coverage,fuzzing --seed 7420 --no-color >"$WORK/schemathesis.log" 2>&1); then
    pass "schemathesis: $(grep -Eo '[0-9]+ passed' "$WORK/schemathesis.log" | tail -n 1 || echo 'all') operations conform"
else
    tail -n 80 "$WORK/schemathesis.log"; fail "schemathesis found responses that break the document"
fi

# 5. The gateway is still healthy and stops cleanly on SIGTERM.
if curl -sf "$URL/v1/health" | jq -e '.status == "ok"' >/dev/null; then pass "healthy after the run"; else fail "unhealthy after the run"; fi
kill -TERM "$GATEWAY_PID"
for _ in $(seq 1 100); do kill -0 "$GATEWAY_PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$GATEWAY_PID" 2>/dev/null; then fail "tether serve still running 10 s after SIGTERM"; else
    wait "$GATEWAY_PID"; STATUS=$?
    if [ "$STATUS" -eq 0 ] || [ "$STATUS" -eq 130 ]; then pass "SIGTERM: exit $STATUS"; else cat "$WORK/serve.err"; fail "SIGTERM: exit $STATUS"; fi
fi
finish

# Shared by the test scripts `make test` runs (Tests/Live, Tests/ACP, Tests/Gateway, Tests/Page):
# the tally whose last line the CI reads, and the venvs that bring PyPI tools. Source it.

PASSED=0
FAILED=0
pass() { PASSED=$((PASSED + 1)); echo "PASS: $*"; }
fail() { FAILED=$((FAILED + 1)); echo "FAIL: $*"; }
# The closing line, "N passed, N failed"; exits non-zero on any failure (or when nothing passed).
finish() {
    echo "$PASSED passed, $FAILED failed"
    [ "$FAILED" -eq 0 ] && [ "$PASSED" -gt 0 ]
    exit $?
}

# ensure_venv VENV NAME==VERSION...: a venv at VENV holding exactly these versions (idempotent,
# quiet; pip's output goes to VENV/pip.log and is shown only on failure). Returns non-zero when
# it cannot be made.
ensure_venv() {
    local venv=$1; shift
    local checks="" requirement
    for requirement in "$@"; do
        checks="$checks or m.version('${requirement%%==*}') != '${requirement##*==}'"
    done
    if "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(False $checks)" 2>/dev/null; then
        return 0
    fi
    python3 -m venv "$venv" >/dev/null 2>&1 || { echo "python3 -m venv $venv failed" >&2; return 1; }
    timeout 600 "$venv/bin/pip" install -q --disable-pip-version-check "$@" >"$venv/pip.log" 2>&1 \
        || { cat "$venv/pip.log"; return 1; }
}

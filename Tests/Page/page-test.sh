#!/usr/bin/env bash
# The gateway's page (GET /) in a real browser: headless Chromium and chromedriver from Debian's
# packages (`make setup` installs them), driven over WebDriver by PyPI's selenium (in a venv under
# .build-page), against the real `tether serve` over `tether simulate opencode`. Loopback only.
# The scenarios are in page_test.py; the phone screenshot is saved as .build-page/page-phone.png.
# Last line: "N passed, N failed"; exit status non-zero on any failure.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"
OUT="$ROOT/.build-page"
VENV="$OUT/venv"
# 4.52 needs a certifi newer than some PyPI mirrors carry.
SELENIUM_VERSION="4.51.0"
source "$ROOT/Tests/script-support.sh"
# Setup failures end the run at once (the scenarios themselves are tallied by page_test.py).
fail() { echo "FAIL: $*"; echo "0 passed, 1 failed"; exit 1; }

mkdir -p "$OUT"

# The page's scripts parse (`make test-setup` installs Debian's nodejs): a syntax error would
# otherwise show only as a blank page.
command -v node >/dev/null || fail "node not found (make test-setup installs Debian's nodejs)"
for script in "$ROOT"/Sources/TetherGateway/Page/*.js; do
    node --check "$script" || fail "node --check ${script#"$ROOT"/}"
done
ensure_venv "$VENV" "selenium==$SELENIUM_VERSION" || fail "pip install selenium==$SELENIUM_VERSION"

CHROMIUM="${CHROMIUM:-$(command -v chromium || true)}"
CHROMEDRIVER="${CHROMEDRIVER:-$(command -v chromedriver || true)}"
[ -x "$CHROMIUM" ] && [ -x "$CHROMEDRIVER" ] || fail "chromium and chromedriver not found (make setup installs Debian's chromium and chromium-driver)"

TETHER="${TETHER_BIN:-$(swift build --show-bin-path)/tether}"
[ -x "$TETHER" ] || fail "tether binary not found at $TETHER (run swift build)"

# selenium must not look for a driver on the internet: the paths are given, and no proxy is used for loopback.
export SE_AVOID_STATS=true NO_PROXY=127.0.0.1,localhost no_proxy=127.0.0.1,localhost
TETHER_BIN="$TETHER" PAGE_OUT="$OUT" CHROMIUM="$CHROMIUM" CHROMEDRIVER="$CHROMEDRIVER" \
    timeout 300 "$VENV/bin/python" "$ROOT/Tests/Page/page_test.py"
STATUS=$?
[ "$STATUS" -eq 124 ] && fail "the page test took more than 300 s"
exit "$STATUS"

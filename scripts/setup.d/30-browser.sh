#!/usr/bin/env bash
# The browser env's Chromium: Debian's package (Playwright drives it; never `playwright install`).
# Idempotent; runs as root from scripts/setup.sh with CI=true and no stdin.
set -euo pipefail

if [ -x /usr/bin/chromium ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  echo "setup.d/30-browser: no /usr/bin/chromium; install Debian's 'chromium' package (as root)" >&2
  exit 0  # the browser env's tests say why they skip
fi
echo "setup.d/30-browser: installing chromium with apt"
export DEBIAN_FRONTEND=noninteractive
log=$(mktemp)
if ! flock /tmp/apt.lock sh -c 'apt-get update -qq && apt-get install -y -qq --no-install-recommends chromium' \
    >"$log" 2>&1; then
  cat "$log" >&2
  echo "setup.d/30-browser: apt-get install chromium failed" >&2
  exit 1
fi
rm -f "$log"
/usr/bin/chromium --version

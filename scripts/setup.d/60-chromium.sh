#!/usr/bin/env bash
# Debian's chromium for the web playground test (Playwright drives /usr/bin/chromium;
# never `playwright install`). Idempotent; as root on Debian 12 with apt.
set -euo pipefail
command -v chromium >/dev/null 2>&1 && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "setup: installing chromium with apt"
  export DEBIAN_FRONTEND=noninteractive
  flock /tmp/apt.lock apt-get install -y -qq chromium >/dev/null 2>&1 || {
    flock /tmp/apt.lock apt-get update -qq
    flock /tmp/apt.lock apt-get install -y -qq chromium >/dev/null
  }
else
  echo "setup: chromium is missing; the playground browser test will skip" >&2
fi

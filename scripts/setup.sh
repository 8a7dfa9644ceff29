#!/usr/bin/env bash
# Create .venv and install the package with OPENENV_EXTRAS (default dev: the test tools),
# every env in envs/, and what scripts/setup.d adds. OPENENV_EXTRAS=standard is serving and
# driving envs without the training stack (scripts/demo.sh); OPENENV_EXTRAS=all adds it.
# Works on a fresh Debian 12 (installs python3-venv with apt when run as root).
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
if ! "$PY" -c 'import sys; assert sys.version_info >= (3, 11)' 2>/dev/null; then
  echo "setup: need Python >= 3.11 as '$PY' (set PYTHON=...)" >&2; exit 1
fi
if ! "$PY" -m venv --help >/dev/null 2>&1 || ! "$PY" -c 'import ensurepip' 2>/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "setup: installing python3-venv with apt"
    DEBIAN_FRONTEND=noninteractive apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-venv python3-pip >/dev/null
  else
    echo "setup: '$PY -m venv' is unavailable; install python3-venv" >&2; exit 1
  fi
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv"
  "$PY" -m venv .venv
fi
extras=${OPENENV_EXTRAS:-dev}
stamp=".venv/.installed-$extras-$(cat pyproject.toml envs/*/pyproject.toml | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing openenv[$extras] and envs/ into .venv (about a minute)"
  args=(-e ".[$extras]")
  for env in envs/*/; do args+=(-e "$env"); done
  log=$(mktemp)
  if ! { .venv/bin/python -m pip install -q --disable-pip-version-check -U pip &&
         .venv/bin/python -m pip install -q --disable-pip-version-check "${args[@]}"; } >"$log" 2>&1; then
    cat "$log" >&2; echo "setup: pip install failed" >&2; exit 1
  fi
  rm -f "$log"
  rm -f .venv/.installed-*; touch "$stamp"
fi
# Parts marked "# setup.d: train" install the training stack (torch, ~2 GB): only for
# the extras that include it (train, all, and dev, which CI's training tests need).
# Parts marked "# setup.d: test" make test fixtures (other venvs, packages only tests
# use): only for dev, the extras of scripts/test.sh, never for the demo's standard.
case ",$extras," in
  *,train,*|*,all,*|*,dev,*) train=1 ;;
  *) train=0 ;;
esac
case ",$extras," in
  *,dev,*) test=1 ;;
  *) test=0 ;;
esac
for part in scripts/setup.d/*.sh; do
  [ -e "$part" ] || continue
  if [ "$train" = 0 ] && grep -q '^# setup.d: train' "$part"; then
    continue
  fi
  if [ "$test" = 0 ] && grep -q '^# setup.d: test' "$part"; then
    continue
  fi
  bash "$part"
done

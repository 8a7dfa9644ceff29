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
# Parts marked "# setup.d: apart" write only a folder of their own (another venv, a
# package tree) and need nothing that setup makes, .venv included: they start first,
# before the main install, and run beside everything else; each one's output is shown
# when it ends, and setup fails if one failed. Each part that takes a second or more
# says how long it took.
wanted() {
  [ -e "$1" ] || return 1
  if [ "$train" = 0 ] && grep -q '^# setup.d: train' "$1"; then return 1; fi
  if [ "$test" = 0 ] && grep -q '^# setup.d: test' "$1"; then return 1; fi
  return 0
}
timed() {  # timed PART: run it; its time when it took a second or more
  local start=$SECONDS rc=0
  bash "$1" || rc=$?
  if [ $((SECONDS - start)) -ge 1 ]; then echo "setup: ${1##*/} took $((SECONDS - start)) s"; fi
  return "$rc"
}
apart_pids=()
apart_logs=()
for part in scripts/setup.d/*.sh; do
  wanted "$part" && grep -q '^# setup.d: apart' "$part" || continue
  log=$(mktemp)
  # niced: the main install (the critical path) gets the CPU first, an apart part the rest
  ( renice -n 10 -p "$BASHPID" >/dev/null 2>&1 || true; timed "$part" ) >"$log" 2>&1 &
  apart_pids+=("$!")
  apart_logs+=("$log")
done
stamp=".venv/.installed-$extras-$(cat pyproject.toml envs/*/pyproject.toml | sha1sum | cut -c1-12)"
if [ ! -f "$stamp" ]; then
  echo "setup: installing openenv[$extras] and envs/ into .venv (about a minute)"
  args=(-e ".[$extras]")
  for env in envs/*/; do args+=(-e "$env"); done
  log=$(mktemp)
  start=$SECONDS
  # Every project here builds with setuptools: it goes into .venv with pip, and the
  # editable builds use it there (--no-build-isolation) instead of a fresh build env each.
  if ! { .venv/bin/python -m pip install -q --disable-pip-version-check -U pip "setuptools>=68" &&
         .venv/bin/python -m pip install -q --disable-pip-version-check --no-build-isolation "${args[@]}"
       } >"$log" 2>&1; then
    cat "$log" >&2; echo "setup: pip install failed" >&2; exit 1
  fi
  rm -f "$log"
  rm -f .venv/.installed-*; touch "$stamp"
  echo "setup: openenv[$extras] and envs/ installed in $((SECONDS - start)) s"
fi
for part in scripts/setup.d/*.sh; do
  wanted "$part" && ! grep -q '^# setup.d: apart' "$part" || continue
  timed "$part"
done
failed=0
for i in "${!apart_pids[@]}"; do
  if wait "${apart_pids[$i]}"; then cat "${apart_logs[$i]}"; else cat "${apart_logs[$i]}" >&2; failed=1; fi
  rm -f "${apart_logs[$i]}"
done
[ "$failed" = 0 ] || { echo "setup: a part that ran apart failed (its output is above)" >&2; exit 1; }

#!/usr/bin/env bash
# The test suite's side venvs, each its own interpreter beside .venv:
#   upstream   .venv-upstream: upstream openenv==0.10.0 (the interop tests)
#   verifiers  .cache/verifiers-venv: verifiers 0.4 with this package and the echo and
#              coding envs editable (tests/interop/test_verifiers_taskset.py)
#   inspect    .cache/inspect-venv: Inspect AI (PyPI's inspect-ai, pinned) and the openai SDK,
#              with this package editable (tests/eval/test_harness.py). Not in .venv: inspect-ai
#              pulls botocore, which holds python-dateutil below 3, and kubernetes needs >= 3.
# Each is made once: a stamp written after a complete install marks it done, a half-made
# one is rebuilt. They need only `python3 -m venv` and pip, so scripts/test.sh builds them
# (`prefetch`) in the background while scripts/setup.sh fills .venv. With no argument: all three, at once.
# Exit status 0 when each asked for is ready; otherwise pip's last lines on stderr.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}

upstream_ok() {
  # Upstream's package is also called `openenv`: check it with -I from / (our ./openenv
  # would shadow it), by version, not just by import.
  [ -x .venv-upstream/bin/python ] && (cd / && "$OLDPWD/.venv-upstream/bin/python" -I -c \
    'import importlib.metadata as m, openenv.core; assert m.version("openenv") == "0.10.0"') 2>/dev/null
}

install() {  # install VENV PIP-ARGS...: a fresh venv, then pip; pip's tail on failure
  local venv=$1; shift
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  local log; log=$(mktemp)
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@" >"$log" 2>&1; then
    tail -5 "$log" >&2; rm -f "$log"; return 1
  fi
  rm -f "$log"
}

upstream() {
  upstream_ok && return 0
  echo "side venvs: installing upstream openenv==0.10.0 into .venv-upstream (interop tests)"
  install .venv-upstream "openenv==0.10.0" || return 1
  upstream_ok || { echo "side venvs: .venv-upstream does not hold openenv 0.10.0" >&2; return 1; }
}

VF_VENV=${OPENENV_VERIFIERS_VENV:-.cache/verifiers-venv}
VF_REQ="verifiers>=0.4,<0.5"

verifiers_deps() {  # verifiers and its dependencies: network only, nothing of this tree
  [ -f "$VF_VENV/openenv-verifiers-deps" ] || [ -f "$VF_VENV/openenv-verifiers-ready" ] && return 0
  echo "side venvs: installing verifiers 0.4 into $VF_VENV (interop tests)"
  mkdir -p "$(dirname "$VF_VENV")"
  install "$VF_VENV" "$VF_REQ" || return 1
  touch "$VF_VENV/openenv-verifiers-deps"
}

verifiers() {  # then this package and the two envs, editable (builds in this tree)
  [ -f "$VF_VENV/openenv-verifiers-ready" ] && return 0
  verifiers_deps || return 1
  local log; log=$(mktemp)
  if ! "$VF_VENV/bin/python" -m pip install -q --disable-pip-version-check \
      -e . -e envs/echo_env -e envs/coding_env >"$log" 2>&1; then
    tail -5 "$log" >&2; rm -f "$log"; return 1
  fi
  rm -f "$log"
  echo "$VF_REQ" >"$VF_VENV/openenv-verifiers-ready"
}

IN_VENV=${OPENENV_INSPECT_VENV:-.cache/inspect-venv}
IN_REQ="inspect-ai==0.3.285"

# The stamps hold the pin: a venv made for another pin is made again.
inspect_deps() {  # Inspect AI and the SDK of its openai-api provider: network only
  [ "$(cat "$IN_VENV/openenv-inspect-deps" 2>/dev/null)" = "$IN_REQ" ] && return 0
  echo "side venvs: installing $IN_REQ into $IN_VENV (eval tests)"
  mkdir -p "$(dirname "$IN_VENV")"
  install "$IN_VENV" "$IN_REQ" "openai>=1.40" || return 1
  echo "$IN_REQ" >"$IN_VENV/openenv-inspect-deps"
}

inspect() {  # then this package, editable (openenv.core.evals.InspectAIHarness)
  [ "$(cat "$IN_VENV/openenv-inspect-ready" 2>/dev/null)" = "$IN_REQ" ] && return 0
  inspect_deps || return 1
  local log; log=$(mktemp)
  if ! "$IN_VENV/bin/python" -m pip install -q --disable-pip-version-check -e . >"$log" 2>&1; then
    tail -5 "$log" >&2; rm -f "$log"; return 1
  fi
  rm -f "$log"
  echo "$IN_REQ" >"$IN_VENV/openenv-inspect-ready"
}

each() {  # each at once; 0 when each is ready
  local rc=0 pids=() f p
  for f in "$@"; do "$f" & pids+=("$!"); done
  for p in "${pids[@]}"; do wait "$p" || rc=1; done
  return "$rc"
}

case "${1:-all}" in
  upstream) upstream ;;
  verifiers) verifiers ;;
  inspect) inspect ;;
  all) each upstream verifiers inspect ;;
  # What needs only the network (no build in this tree, which scripts/setup.sh builds at
  # the same time): scripts/test.sh runs this in the background, then `all` to finish.
  prefetch) each upstream verifiers_deps inspect_deps ;;
  *) echo "usage: $0 [upstream|verifiers|inspect|prefetch]" >&2; exit 2 ;;
esac

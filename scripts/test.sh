#!/usr/bin/env bash
# Set up everything the tests need, then run them: lint, type check, pytest.
#   .venv with the package and dev tools; .venv-upstream with upstream openenv 0.10.0
#   (interop tests); a Docker engine, an offline base image and a wheelhouse
#   (container tests). Each step is skipped when already done.
# Pass pytest arguments through: bash scripts/test.sh -k ws
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

# Upstream's package is also called `openenv`: check it with -I from / (our ./openenv
# would shadow it), by version, not just by import.
upstream_ok() {
  [ -x .venv-upstream/bin/python ] && (cd / && "$OLDPWD/.venv-upstream/bin/python" -I -c \
    'import importlib.metadata as m, openenv.core; assert m.version("openenv") == "0.10.0"') 2>/dev/null
}
if ! upstream_ok; then
  echo "test: installing upstream openenv==0.10.0 into .venv-upstream (interop tests)"
  python3 -m venv .venv-upstream
  log=$(mktemp)
  .venv-upstream/bin/python -m pip install -q --disable-pip-version-check "openenv==0.10.0" >"$log" 2>&1 \
    || tail -20 "$log" >&2
  rm -f "$log"
  if ! upstream_ok; then
    if [ "${CI:-}" = true ]; then
      echo "test: .venv-upstream does not hold openenv 0.10.0; CI needs the interop tests" >&2; exit 1
    fi
    echo "test: .venv-upstream does not hold openenv 0.10.0; interop tests will say why they skip" >&2
  fi
fi

if [ -f scripts/docker/install_engine.sh ] && [ "${OPENENV_SKIP_DOCKER:-0}" != 1 ]; then
  if bash scripts/docker/install_engine.sh; then
    bash scripts/docker/build_base_image.sh
  elif [ "${CI:-}" = true ]; then
    echo "test: no Docker engine could be started; CI needs the container tests" >&2; exit 1
  else
    echo "test: no Docker engine could be started; container tests will skip with this reason" >&2
  fi
fi

echo "test: ruff"
.venv/bin/ruff check openenv envs tests examples bench
echo "test: mypy"
.venv/bin/mypy
echo "test: pytest"
.venv/bin/python -m pytest -q -rfEsx --durations=30 "$@"  # -rfEsx: every failure, error, skip and expected failure, with its reason; the 30 slowest tests

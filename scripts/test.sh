#!/usr/bin/env bash
# Set up everything the tests need, then run them: lint, type check, pytest.
#   .venv with the package and dev tools; the side venvs of scripts/side_venvs.sh
#   (upstream openenv 0.10.0, verifiers: interop tests; Inspect AI: eval tests); a Docker engine, an offline base image and a wheelhouse
#   (container tests). Each step is skipped when already done.
# Pass pytest arguments through: bash scripts/test.sh -k ws
set -euo pipefail
cd "$(dirname "$0")/.."
# The side venvs (.venv-upstream, the verifiers and Inspect venvs) need only the network: fetch them in
# the background while setup.sh fills .venv, then finish them (scripts/side_venvs.sh).
side_log=$(mktemp)
side_pid=
if python3 -m venv --help >/dev/null 2>&1 && python3 -c 'import ensurepip' 2>/dev/null; then
  bash scripts/side_venvs.sh prefetch >"$side_log" 2>&1 & side_pid=$!
fi
bash scripts/setup.sh
echo "test: .venv ready after ${SECONDS} s"
# Lint needs only .venv: ruff and mypy (about 40 s of one core) run while the side venvs
# and the Docker engine get ready; their output follows once those are done.
lint_log=$(mktemp)
{ echo "test: ruff" && .venv/bin/ruff check openenv envs tests examples bench &&
  echo "test: mypy" && .venv/bin/mypy; } >"$lint_log" 2>&1 &
lint_pid=$!
if [ -n "$side_pid" ]; then wait "$side_pid" || true; cat "$side_log"; fi
rm -f "$side_log"
if ! bash scripts/side_venvs.sh; then
  if [ "${CI:-}" = true ]; then
    echo "test: the side venvs could not be made; CI needs the interop tests" >&2; exit 1
  fi
  echo "test: the side venvs could not be made; interop tests will say why they skip" >&2
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

echo "test: setup done after ${SECONDS} s"
lint_rc=0
finish_lint() {  # lint's output, once it is done; its failure fails the run
  wait "$lint_pid" || lint_rc=$?
  cat "$lint_log"
  rm -f "$lint_log"
  if [ "$lint_rc" != 0 ]; then echo "test: lint failed (above)" >&2; exit "$lint_rc"; fi
}
# Lint still running (mypy, when setup was quick) goes on beside pytest: its output and
# verdict follow pytest's, and a lint failure fails the run as before.
if ! kill -0 "$lint_pid" 2>/dev/null; then finish_lint; lint_pid=; fi
echo "test: pytest (after ${SECONDS} s${lint_pid:+; lint still running beside it})"
pytest_rc=0
.venv/bin/python -m pytest -q -rfEsx --durations=60 "$@" || pytest_rc=$?  # -rfEsx: every failure, error, skip and expected failure, with its reason; the 60 slowest tests
if [ -n "$lint_pid" ]; then finish_lint; fi
exit "$pytest_rc"

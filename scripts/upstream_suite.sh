#!/usr/bin/env bash
# Upstream OpenEnv's own env tests, run side by side: once with upstream's package
# (openenv==0.10.0 from PyPI) and once with ours installed in its place, same machine,
# same run, same third-party packages. Prints both pass counts, the share of upstream's
# passing tests that pass on ours, and every test that passes upstream but not on ours.
#
#   bash scripts/upstream_suite.sh /path/to/OpenEnv-checkout [pytest args...]
#
# The checkout is huggingface/OpenEnv (its tests/envs and envs/ are used unchanged).
# Not part of CI: CI cannot reach GitHub to get the checkout. Work files go to
# $OPENENV_SUITE_DIR (default /tmp/openenv-upstream-suite); the two venvs are kept there
# and reused on the next run.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
checkout="$(cd "${1:?usage: upstream_suite.sh OPENENV_CHECKOUT [pytest args]}" && pwd)"
shift
work="${OPENENV_SUITE_DIR:-/tmp/openenv-upstream-suite}"
python="${PYTHON:-python3.11}"
mkdir -p "$work"
[ -d "$checkout/tests/envs" ] || { echo "upstream_suite: $checkout has no tests/envs" >&2; exit 2; }

# The env tests' own third-party needs (what upstream's venv gets with openenv 0.10.0,
# plus test tools and the envs' light dependencies).
extras=(pytest pytest-asyncio fastmcp openai requests)

make_venv() {  # make_venv DIR: a venv with upstream 0.10.0 and the extras
  local dir="$1"
  if [ ! -x "$dir/bin/python" ]; then
    echo "upstream_suite: creating $dir"
    "$python" -m venv "$dir"
    "$dir/bin/python" -m pip install -q --disable-pip-version-check "openenv==0.10.0" "${extras[@]}"
  fi
}

make_venv "$work/venv-upstream"
if [ ! -x "$work/venv-ours/bin/python" ]; then
  make_venv "$work/venv-ours"
  # ours in place of upstream's: the same third-party packages, our openenv package
  "$work/venv-ours/bin/python" -m pip uninstall -q -y openenv
fi
# ours needs the MCP SDK 2.x, which FastMCP supports from 4.0 (upstream's venv: SDK 1.x, FastMCP 3)
"$work/venv-ours/bin/python" -m pip install -q --disable-pip-version-check "$here[standard]" "fastmcp>=4,<5"

run() {  # run NAME: the env tests with that venv, a JUnit report in $work/NAME.xml
  local name="$1"; shift
  echo "upstream_suite: tests/envs with $name"
  (cd "$checkout" && PYTHONPATH="$checkout/envs" timeout 1800 "$work/venv-$name/bin/python" -m pytest -q \
     -p no:cacheprovider --continue-on-collection-errors -o addopts="" tests/envs \
     --junitxml="$work/$name.xml" "$@" >"$work/$name.log" 2>&1) || true
  tail -n 1 "$work/$name.log"
}
run upstream "$@"
run ours "$@"
"$work/venv-ours/bin/python" "$here/scripts/_suite_compare.py" "$work/upstream.xml" "$work/ours.xml"

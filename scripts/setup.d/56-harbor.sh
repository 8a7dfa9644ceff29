#!/usr/bin/env bash
# setup.d: test
# setup.d: apart
# Harbor (the Terminal-Bench 2 harness, PyPI `harbor`, Python >= 3.12) in its own venv,
# .venv-harbor, for envs/terminal_env/tests/test_harbor_client.py: Harbor runs the
# terminal env's image tasks with its oracle, and the env runs a task made by Harbor's
# `harbor task init`. Harbor's Docker environment drives `docker compose` (v2); where
# the Docker CLI has no compose plugin (Debian 12's docker.io has none, and its
# docker-compose package is the v1 program), the plugin binary is taken from Debian 13's
# docker-compose package (apt-get download with a private package list, nothing
# installed system-wide) into .venv-harbor/docker/cli-plugins/; the test points the
# Docker CLI there (docs/harbor.md). Idempotent; the tests skip, saying why, without it
# (and fail under CI=true). Runs apart (beside the main install: about 50 s of a fresh
# setup): it needs nothing of .venv and writes only .venv-harbor, so its pip takes no lock.
set -euo pipefail
cd "$(dirname "$0")/../.."
want="harbor==0.26.0"
venv=.venv-harbor
plugins=$venv/docker/cli-plugins

if [ ! -x "$venv/bin/harbor" ]; then
  py=""
  for cand in /root/.pyenv/versions/3.1[2-9]*/bin/python python3.13 python3.12; do
    if command -v "$cand" >/dev/null 2>&1 \
        && "$cand" -c 'import sys; sys.exit(sys.version_info < (3, 12))' 2>/dev/null; then
      py=$cand; break
    fi
  done
  [ -n "$py" ] || { echo "setup: Harbor needs Python >= 3.12 and none was found" >&2; exit 1; }
  echo "setup: installing $want into $venv ($("$py" --version))"
  rm -rf "$venv"
  "$py" -m venv "$venv"
  log=$(mktemp)
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "$want" >"$log" 2>&1; then
    cat "$log" >&2; rm -f "$log"; rm -rf "$venv"; echo "setup: installing $want failed" >&2; exit 1
  fi
  rm -f "$log"
fi

if docker compose version >/dev/null 2>&1 || [ -x "$plugins/docker-compose" ]; then
  exit 0
fi
echo "setup: docker compose v2 for Harbor: Debian 13's docker-compose package into $plugins"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/state/lists/partial" "$tmp/cache/archives/partial" "$tmp/x"
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
  >"$tmp/sources.list"
opts=(-o "Dir::State=$tmp/state" -o "Dir::Cache=$tmp/cache" -o "Dir::Etc::SourceList=$tmp/sources.list"
      -o "Dir::Etc::SourceParts=/dev/null" -o "APT::Sandbox::User=root")
if ! apt-get "${opts[@]}" update >"$tmp/log" 2>&1 \
    || ! (cd "$tmp" && apt-get "${opts[@]}" download docker-compose) >>"$tmp/log" 2>&1; then
  cat "$tmp/log" >&2; echo "setup: downloading docker-compose failed" >&2; exit 1
fi
dpkg-deb -x "$tmp"/docker-compose_*.deb "$tmp/x"
mkdir -p "$plugins"
install -m 755 "$tmp/x/usr/libexec/docker/cli-plugins/docker-compose" "$plugins/docker-compose"
"$plugins/docker-compose" version

#!/usr/bin/env bash
# Build a wheelhouse that Docker builds install from with `pip install --no-index`
# (no network is needed, or possible, inside the build).
#
# Usage: scripts/docker/build_wheelhouse.sh [OUTDIR] [REQ...]
#   OUTDIR  default .wheelhouse/ (gitignored). It is also the docker build context
#           for docker/base.Dockerfile.
#   REQ     each one of:
#             - a local project directory (has pyproject.toml or setup.py), e.g. `.`
#               or `envs/echo_env`: built with `pip wheel --no-deps`; its declared
#               dependencies (Requires-Dist, minus other local projects) are then
#               wheeled from PyPI like the runtime deps;
#             - a requirements file (*.txt): passed as `-r FILE`;
#             - anything else: a requirement specifier, e.g. 'numpy>=2'.
#
# Always included (runtime deps of the OpenEnv server + container init):
#   starlette uvicorn websockets pydantic httpx orjson msgpack uvloop httptools dumb-init
#
# Writes into OUTDIR, next to the wheels:
#   requirements.txt  pinned name==version of every non-local distribution, resolved
#                     by installing everything into a scratch venv with --no-index
#                     (this is what docker/base.Dockerfile installs);
#   local.txt         name==version of each local project wheel (install these by
#                     name, e.g. --build-arg OPENENV_PACKAGES="openenv echo-env");
#   openenv-install-env  a copy of docker/openenv-install-env, which the base image
#                     puts at /opt/venv/bin for the env Dockerfiles.
#
# The wheels are built for the interpreter $PYTHON (default python3), which must
# match the image's Python (3.11 for openenv-local/python:3.11-bookworm and
# python:3.11-slim) and libc (glibc; both images are Debian bookworm).
#
# Environment knobs:
#   PYTHON                      interpreter to build wheels for (default python3)
#   OPENENV_WHEELHOUSE_OFFLINE=1  resolve only from OUTDIR (re-run without network)
#   OPENENV_WHEELHOUSE_CHECK=0    skip the scratch-venv check (then no requirements.txt
#                                 is (re)written)
#   PIP_CONSTRAINT              usual pip knob, e.g. to pin versions
set -euo pipefail

PY="${PYTHON:-python3}"
INSTALLER="$(cd "$(dirname "$0")/../../docker" && pwd)/openenv-install-env"
RUNTIME_REQS=(starlette uvicorn websockets pydantic httpx orjson msgpack uvloop httptools dumb-init)

log() { printf '[build_wheelhouse] %s\n' "$*" >&2; }
die() { printf '[build_wheelhouse] ERROR: %s\n' "$*" >&2; exit 1; }

case "${1:-}" in -h|--help) sed -n '2,38p' "$0"; exit 0 ;; esac

OUT="${1:-.wheelhouse}"
[ $# -gt 0 ] && shift
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

command -v "$PY" >/dev/null 2>&1 || die "python interpreter '$PY' not found (set PYTHON=...)"
"$PY" -m pip --version >/dev/null 2>&1 || die "'$PY -m pip' does not work"
pyver="$("$PY" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
[ "$pyver" = "3.11" ] || log "WARNING: building wheels for Python $pyver; the images use Python 3.11 (set PYTHON=python3.11)"

local_dirs=()
specs=()
for arg in "$@"; do
    if [ -d "$arg" ]; then
        if [ -f "$arg/pyproject.toml" ] || [ -f "$arg/setup.py" ]; then
            local_dirs+=("$(cd "$arg" && pwd)")
        else
            die "$arg is a directory but has no pyproject.toml or setup.py"
        fi
    elif [ -f "$arg" ]; then
        specs+=(-r "$arg")
    else
        specs+=("$arg")
    fi
done

offline=()
if [ "${OPENENV_WHEELHOUSE_OFFLINE:-0}" = 1 ]; then
    offline=(--no-index --find-links "$OUT")
fi

tmp="$(mktemp -d /tmp/openenv-wheelhouse.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

# --- 1. local projects, no deps -------------------------------------------------
local_wheels=()
for d in "${local_dirs[@]}"; do
    log "pip wheel --no-deps $d"
    rm -rf "$tmp/local" "$tmp/src" && mkdir -p "$tmp/local" "$tmp/src"
    # Build from a clean copy: setuptools' in-tree build/ would otherwise be left in
    # the project and reused (a deleted module would live on in later wheels).
    tar -C "$d" --exclude-vcs --exclude='./.venv*' --exclude='./build' --exclude='./dist' \
        --exclude='*.egg-info' --exclude='__pycache__' --exclude='./.wheelhouse' -cf - . \
        | tar -C "$tmp/src" -xf - || die "copying $d failed"
    "$PY" -m pip wheel -q --no-deps --wheel-dir "$tmp/local" "$tmp/src" </dev/null \
        || die "building a wheel of $d failed"
    for w in "$tmp/local"/*.whl; do
        [ -f "$w" ] || die "no wheel produced for $d"
        mv -f "$w" "$OUT/"   # overwrite a stale wheel of the same name/version
        local_wheels+=("$OUT/$(basename "$w")")
    done
done

# Names (normalised) of local projects, and their non-local Requires-Dist.
names_and_deps() {
    "$PY" - "$@" <<'PYEOF'
import re, sys, zipfile
def norm(n): return re.sub(r"[-_.]+", "-", n).lower()
wheels = sys.argv[1:]
local, deps = {}, []
for w in wheels:
    with zipfile.ZipFile(w) as z:
        meta = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        text = z.read(meta).decode("utf-8", "replace")
    name = version = None
    for line in text.splitlines():
        if not line.strip():
            break  # end of headers
        k, _, v = line.partition(":")
        v = v.strip()
        if k == "Name": name = v
        elif k == "Version": version = v
        elif k == "Requires-Dist":
            if re.search(r"\bextra\s*==", v):
                continue  # optional extras are not installed
            deps.append(v)
    local[norm(name)] = (name, version)
for key, (name, version) in local.items():
    print("LOCAL\t%s==%s" % (name, version))
for d in deps:
    m = re.match(r"\s*([A-Za-z0-9][A-Za-z0-9._-]*)", d)
    if m and norm(m.group(1)) not in local:
        print("DEP\t%s" % d)
PYEOF
}

local_pins=()
dep_specs=()
if [ "${#local_wheels[@]}" -gt 0 ]; then
    while IFS=$'\t' read -r kind value; do
        case "$kind" in
            LOCAL) local_pins+=("$value") ;;
            DEP) dep_specs+=("$value") ;;
        esac
    done < <(names_and_deps "${local_wheels[@]}")
fi

# --- 2. runtime deps + extra specs + deps of local projects --------------------
log "pip wheel ${RUNTIME_REQS[*]} ${specs[*]:-} ${dep_specs[*]:-}"
"$PY" -m pip wheel -q --wheel-dir "$OUT" --prefer-binary "${offline[@]}" \
    "${RUNTIME_REQS[@]}" "${specs[@]}" "${dep_specs[@]}" </dev/null \
    || die "pip wheel of the runtime dependencies failed"

install -m 0755 "$INSTALLER" "$OUT/openenv-install-env"
printf '%s\n' "${local_pins[@]}" > "$OUT/local.txt"
[ "${#local_pins[@]}" -gt 0 ] || : > "$OUT/local.txt"

# --- 3. check: everything installs with --no-index; dumb-init runs -------------
if [ "${OPENENV_WHEELHOUSE_CHECK:-1}" = 1 ]; then
    log "checking the wheelhouse in a scratch venv (pip --no-index)"
    "$PY" -m venv "$tmp/venv" || die "cannot create a venv with $PY"
    # Hermetic: no pip config/env from this host (find-links, indexes, constraints).
    hermetic=(env -u PIP_FIND_LINKS -u PIP_INDEX_URL -u PIP_EXTRA_INDEX_URL -u PIP_CONSTRAINT
              PIP_CONFIG_FILE=/dev/null PIP_DISABLE_PIP_VERSION_CHECK=1)
    local_names=()
    for p in "${local_pins[@]}"; do local_names+=("${p%%==*}"); done
    "${hermetic[@]}" "$tmp/venv/bin/pip" install -q --no-index --only-binary=:all: \
        --find-links "$OUT" "${RUNTIME_REQS[@]}" "${specs[@]}" "${local_names[@]}" </dev/null \
        || die "the wheelhouse is incomplete: installing from it with --no-index failed"
    "$tmp/venv/bin/dumb-init" --version >/dev/null 2>&1 \
        || die "dumb-init wheel did not give a working $tmp/venv/bin/dumb-init"
    out="$("$tmp/venv/bin/dumb-init" -- "$tmp/venv/bin/python" -c 'print("ok")')" && [ "$out" = ok ] \
        || die "dumb-init could not run a child"
    "$tmp/venv/bin/python" -c 'import starlette, uvicorn, websockets, pydantic, httpx, orjson, msgpack, uvloop, httptools' \
        || die "runtime imports failed in the scratch venv"
    # Pinned lock of every non-local distribution.
    "${hermetic[@]}" "$tmp/venv/bin/pip" freeze --exclude-editable </dev/null \
        | grep -v ' @ ' \
        | { if [ "${#local_names[@]}" -gt 0 ]; then
                "$PY" -c '
import re, sys
norm = lambda n: re.sub(r"[-_.]+", "-", n).lower()
skip = {norm(n) for n in sys.argv[1:]}
for line in sys.stdin:
    if norm(line.split("==")[0]) not in skip:
        sys.stdout.write(line)
' "${local_names[@]}"
            else cat; fi; } > "$OUT/requirements.txt"
    grep -q '^dumb-init==' "$OUT/requirements.txt" || die "dumb-init missing from requirements.txt"
    log "ok: $(wc -l < "$OUT/requirements.txt") pinned deps, ${#local_pins[@]} local project(s), $(ls "$OUT"/*.whl | wc -l) wheels, $(du -sh "$OUT" | cut -f1)"
else
    log "skipped the check (OPENENV_WHEELHOUSE_CHECK=0); requirements.txt not updated"
    [ -f "$OUT/requirements.txt" ] || printf '%s\n' "${RUNTIME_REQS[@]}" > "$OUT/requirements.txt"
fi

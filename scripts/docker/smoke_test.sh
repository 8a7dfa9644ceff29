#!/usr/bin/env bash
# End-to-end check of the container tooling, offline:
#   engine up -> local base image -> wheelhouse -> docker/base.Dockerfile built with
#   --network none -> container serving /health on 127.0.0.1:PORT, as uid 1000,
#   HEALTHCHECK healthy, dumb-init as PID 1 forwarding SIGTERM on `docker stop`.
# The server is a stand-in (Starlette + uvicorn from the image's venv, the stack
# `openenv serve` runs on), so this checks the image alone, with no env installed. Prints timings and "smoke: N passed, N failed".
#
# Usage: scripts/docker/smoke_test.sh [--base-image IMG] [--wheelhouse DIR]
#                                     [--port N] [--tag TAG] [--keep-image] [--no-cache]
#   --base-image  default openenv-local/python:3.11-bookworm (built if missing when
#                 it is that tag); python:3.11-slim works where a registry is reachable
#   --wheelhouse  default .wheelhouse (built if it has no requirements.txt)
#   --port        host port, bound to 127.0.0.1 only (default 18000)
#   --tag         image tag to build (default openenv-base:smoke; removed at the end
#                 unless --keep-image)
#   --no-cache    rebuild every layer (honest build timing)
set -euo pipefail

HERE="$(cd "$(dirname "$0")" && pwd)"
ROOT="$(cd "$HERE/../.." && pwd)"
BASE_IMAGE="openenv-local/python:3.11-bookworm"
WHEELHOUSE="$ROOT/.wheelhouse"
PORT=18000
TAG="openenv-base:smoke"
KEEP_IMAGE=0
NO_CACHE=()

while [ $# -gt 0 ]; do
    case "$1" in
        --base-image) BASE_IMAGE="$2"; shift ;;
        --wheelhouse) WHEELHOUSE="$2"; shift ;;
        --port) PORT="$2"; shift ;;
        --tag) TAG="$2"; shift ;;
        --keep-image) KEEP_IMAGE=1 ;;
        --no-cache) NO_CACHE=(--no-cache) ;;
        -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
    shift
done

log() { printf '[smoke] %s\n' "$*" >&2; }
passed=0; failed=0
ok()   { passed=$((passed + 1)); printf '[smoke] PASS %s\n' "$*" >&2; }
bad()  { failed=$((failed + 1)); printf '[smoke] FAIL %s\n' "$*" >&2; }
now()  { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
timings=()

CNAME="openenv-smoke-$$"
cleanup() {
    docker rm -f "$CNAME" >/dev/null 2>&1 || true
    if [ "$KEEP_IMAGE" -eq 0 ]; then docker rmi "$TAG" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

finish() {
    printf '[smoke] timings:\n' >&2
    printf '[smoke]   %s\n' "${timings[@]}" >&2
    printf 'smoke: %d passed, %d failed\n' "$passed" "$failed"
    [ "$failed" -eq 0 ]
}

# 1. engine
t=$(now)
if bash "$HERE/install_engine.sh" </dev/null; then ok "engine answers"; else bad "engine"; finish; exit 1; fi
timings+=("engine ready: $(secs "$t" "$(now)")s")

# 2. base image
if [ "$BASE_IMAGE" = "openenv-local/python:3.11-bookworm" ]; then
    t=$(now)
    if bash "$HERE/build_base_image.sh" --tag "$BASE_IMAGE" </dev/null; then ok "local base image $BASE_IMAGE"
    else bad "local base image"; finish; exit 1; fi
    timings+=("base image (debootstrap+import, 0 if it existed): $(secs "$t" "$(now)")s")
fi

# 3. wheelhouse
if [ ! -f "$WHEELHOUSE/requirements.txt" ]; then
    t=$(now)
    if bash "$HERE/build_wheelhouse.sh" "$WHEELHOUSE" </dev/null; then ok "wheelhouse built"
    else bad "wheelhouse"; finish; exit 1; fi
    timings+=("wheelhouse: $(secs "$t" "$(now)")s")
fi

# 4. image, offline
t=$(now)
if docker build "${NO_CACHE[@]}" --network none -f "$ROOT/docker/base.Dockerfile" \
        --build-arg BASE_IMAGE="$BASE_IMAGE" -t "$TAG" "$WHEELHOUSE" >/tmp/openenv-smoke-build.log 2>&1 </dev/null; then
    ok "docker build --network none (BASE_IMAGE=$BASE_IMAGE)"
else
    tail -n 30 /tmp/openenv-smoke-build.log >&2
    bad "docker build (log /tmp/openenv-smoke-build.log)"; finish; exit 1
fi
timings+=("image build: $(secs "$t" "$(now)")s")

# 5. run the stand-in server
APP='
import os, uvicorn
from starlette.applications import Starlette
from starlette.responses import JSONResponse
from starlette.routing import Route
async def health(request):
    return JSONResponse({"status": "ok", "uid": os.getuid(), "pid": os.getpid()})
app = Starlette(routes=[Route("/health", health)])
uvicorn.run(app, host=os.environ["OPENENV_HOST"], port=int(os.environ["OPENENV_PORT"]),
            loop="uvloop", http="httptools", log_level="warning")
'
t=$(now)
if ! docker run -d --name "$CNAME" -p "127.0.0.1:$PORT:8000" "$TAG" python3 -c "$APP" >/dev/null; then
    bad "docker run -p 127.0.0.1:$PORT:8000 failed"; finish; exit 1
fi
timings+=("docker run -d returned (container created+started): $(secs "$t" "$(now)")s")
body=""
for _ in $(seq 1 300); do   # <= 30 s
    if body="$(python3 -c 'import sys, urllib.request; print(urllib.request.urlopen(sys.argv[1], timeout=1).read().decode())' \
            "http://127.0.0.1:$PORT/health" 2>/dev/null)"; then break; fi
    body=""
    [ "$(docker inspect -f '{{.State.Running}}' "$CNAME" 2>/dev/null)" = true ] || break
    sleep 0.1
done
if [ -n "$body" ]; then
    ok "GET /health from the host -> $body"
    timings+=("container start -> first /health 200: $(secs "$t" "$(now)")s")
else
    docker logs "$CNAME" 2>&1 | tail -n 20 >&2
    bad "/health not reachable on 127.0.0.1:$PORT within 30 s"
fi

uid="$(docker exec "$CNAME" id -u 2>/dev/null || true)"
[ "$uid" = 1000 ] && ok "runs as uid 1000" || bad "uid is '$uid', want 1000"
case "$body" in *'"uid":1000'*) ok "server process uid 1000" ;; *) bad "server uid not 1000: $body" ;; esac

pid1="$(docker exec "$CNAME" cat /proc/1/cmdline 2>/dev/null | tr '\0\n' '  ' | cut -c1-40 || true)"
case "$pid1" in /opt/venv/bin/dumb-init*) ok "PID 1 is dumb-init ($pid1)" ;; *) bad "PID 1 is '$pid1'" ;; esac

t=$(now); health=""
for _ in $(seq 1 90); do    # <= 90 s (interval 10s, start-period 15s)
    health="$(docker inspect -f '{{.State.Health.Status}}' "$CNAME" 2>/dev/null || true)"
    [ "$health" = healthy ] || [ "$health" = unhealthy ] && break
    sleep 1
done
if [ "$health" = healthy ]; then ok "HEALTHCHECK healthy"; else bad "HEALTHCHECK status '$health'"; fi
timings+=("HEALTHCHECK -> $health after $(secs "$t" "$(now)")s more")

t=$(now)
docker stop -t 10 "$CNAME" >/dev/null
dt="$(secs "$t" "$(now)")"
code="$(docker inspect -f '{{.State.ExitCode}}' "$CNAME")"
timings+=("docker stop: ${dt}s (exit code $code)")
if awk -v d="$dt" 'BEGIN { exit !(d < 5) }' && [ "$code" != 137 ]; then
    ok "SIGTERM forwarded: stopped in ${dt}s, exit code $code"
else
    bad "docker stop took ${dt}s, exit code $code (137 = killed after timeout)"
fi

finish

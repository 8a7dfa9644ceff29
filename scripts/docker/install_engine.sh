#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine.
#
# Idempotent: if `docker info` already answers, nothing is done.
# Otherwise (as root) it installs Debian's docker.io (and debootstrap, which
# scripts/docker/build_base_image.sh needs) when missing, starts
# `dockerd` in the background (overlay2, else vfs), and waits (bounded) until
# `docker info` answers. Works non-interactively (CI=true, no stdin).
#
# Environment knobs:
#   OPENENV_DOCKER_WAIT_S          seconds to wait for the engine (default 60)
#   OPENENV_DOCKERD_LOG            dockerd log file (default /tmp/dockerd.log)
#   OPENENV_DOCKER_STORAGE_DRIVER  drivers to try in order (default overlay2,vfs; overlay2 needs
#                                  a kernel/filesystem that allows it)
#   OPENENV_SKIP_DEBOOTSTRAP=1     do not install debootstrap
set -euo pipefail

WAIT_S="${OPENENV_DOCKER_WAIT_S:-60}"
LOG="${OPENENV_DOCKERD_LOG:-/tmp/dockerd.log}"
DRIVER="${OPENENV_DOCKER_STORAGE_DRIVER:-overlay2,vfs}"

log() { printf '[install_engine] %s\n' "$*" >&2; }
# The daemon's own verdict, without its grpc chatter.
show_log() {
    if grep -qE 'level=(error|fatal)|failed to start' "$LOG" 2>/dev/null; then
        grep -E 'level=(error|fatal)|failed to start' "$LOG" | tail -n 10 >&2
    else
        tail -n 20 "$LOG" >&2 2>/dev/null || true
    fi
}
die() { printf '[install_engine] ERROR: %s\n' "$*" >&2; exit 1; }

engine_answers() {
    command -v docker >/dev/null 2>&1 || return 1
    timeout 10 docker info >/dev/null 2>&1 < /dev/null
}

apt_install() {
    # apt_install PKG...: install Debian packages non-interactively.
    [ "$(id -u)" -eq 0 ] || die "need root to apt-get install $* (run as root)"
    command -v apt-get >/dev/null 2>&1 || die "apt-get not found: install $* by hand"
    export DEBIAN_FRONTEND=noninteractive
    log "apt-get install $*"
    if ! apt-get install -y -q --no-install-recommends "$@" </dev/null >/tmp/openenv-apt.log 2>&1; then
        log "install failed; running apt-get update and retrying"
        apt-get update -q </dev/null >>/tmp/openenv-apt.log 2>&1 \
            || { tail -n 20 /tmp/openenv-apt.log >&2; die "apt-get update failed"; }
        apt-get install -y -q --no-install-recommends "$@" </dev/null >>/tmp/openenv-apt.log 2>&1 \
            || { tail -n 20 /tmp/openenv-apt.log >&2; die "apt-get install $* failed (log: /tmp/openenv-apt.log)"; }
    fi
}

# --- packages ---------------------------------------------------------------
need=()
command -v dockerd >/dev/null 2>&1 || need+=(docker.io)
if [ "${OPENENV_SKIP_DEBOOTSTRAP:-0}" != 1 ] && ! command -v debootstrap >/dev/null 2>&1; then
    need+=(debootstrap)
fi

if engine_answers; then
    log "engine already answers ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
    [ "${#need[@]}" -eq 0 ] || apt_install "${need[@]}"
    exit 0
fi

[ "${#need[@]}" -eq 0 ] || apt_install "${need[@]}"
command -v dockerd >/dev/null 2>&1 || die "dockerd still not found after installing docker.io"
command -v docker >/dev/null 2>&1 || die "docker CLI not found after installing docker.io"

# --- start dockerd ------------------------------------------------------------
[ "$(id -u)" -eq 0 ] || die "no engine answers and starting dockerd needs root"

# start_and_wait DRIVER: 0 when the engine answers, 1 when dockerd exited (try the
# next driver), dies on timeout.
start_and_wait() {
    local driver=$1 pid start
    if [ -f /var/run/docker.pid ] && ! kill -0 "$(cat /var/run/docker.pid 2>/dev/null)" 2>/dev/null; then
        rm -f /var/run/docker.pid  # a dead dockerd's pid file makes the next one refuse to start
    fi
    log "starting dockerd --storage-driver=$driver (log: $LOG)"
    # setsid + nohup: the daemon outlives this script and its session.
    setsid nohup dockerd --storage-driver="$driver" </dev/null >>"$LOG" 2>&1 &
    pid=$!
    start=$(date +%s)
    while :; do
        if engine_answers; then
            log "engine answers after $(( $(date +%s) - start ))s with $driver ($(docker version --format '{{.Server.Version}}' 2>/dev/null || echo '?'))"
            return 0
        fi
        if ! kill -0 "$pid" 2>/dev/null; then
            log "dockerd with $driver exited:"; show_log
            return 1
        fi
        if [ $(( $(date +%s) - start )) -ge "$WAIT_S" ]; then
            show_log
            die "engine did not answer within ${WAIT_S}s; see $LOG (dockerd pid $pid left running)"
        fi
        sleep 1
    done
}

if pid="$(pgrep -x dockerd 2>/dev/null | head -n1)" && [ -n "$pid" ]; then
    log "dockerd already running (pid $pid) but not answering yet; waiting for it"
    for _ in $(seq "$WAIT_S"); do engine_answers && exit 0; sleep 1; done
    show_log; die "the running dockerd (pid $pid) did not answer within ${WAIT_S}s"
fi

# overlay2 is several times faster than vfs (container start ~0.5 s vs ~2 s, builds
# ~3x); vfs works everywhere. Try them in the order given.
IFS=, read -r -a drivers <<<"$DRIVER"
for driver in "${drivers[@]}"; do
    start_and_wait "$driver" && exit 0
done
die "dockerd could not start with any of: $DRIVER; see $LOG"

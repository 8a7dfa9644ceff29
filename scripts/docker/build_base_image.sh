#!/usr/bin/env bash
# Build a local, offline-capable Python base image without any registry:
#   debootstrap (minbase, bookworm) + python3 (3.11) + python3-venv + ca-certificates
#   -> tar -> `docker import` as openenv-local/python:3.11-bookworm
#
# Use it where Docker Hub cannot be reached:
#   docker build --build-arg BASE_IMAGE=openenv-local/python:3.11-bookworm ...
#
# Usage: scripts/docker/build_base_image.sh [--force] [--tag NAME] [--print-mirror]
#   --force         rebuild even if the tag already exists
#   --tag NAME      image tag (default openenv-local/python:3.11-bookworm)
#   --print-mirror  print the Debian mirror that would be used, and exit
#
# Environment knobs:
#   OPENENV_DEBIAN_MIRROR  (default: the mirror apt is configured with for the suite,
#                          read from /etc/apt/sources.list.d/*.sources and *.list and
#                          /etc/apt/sources.list; http://deb.debian.org/debian if none)
#   OPENENV_APT_DIR        where apt's configuration is read from (default /etc/apt)
#   OPENENV_DEBIAN_SUITE   (default bookworm; python3 there is 3.11)
#   OPENENV_DEBOOTSTRAP_CACHE  .deb cache dir reused across rebuilds
#                              (default /var/cache/openenv-debootstrap; "" = none)
#   OPENENV_BASE_WORKDIR   where the rootfs is assembled (default: mktemp -d under /var/tmp)
# Needs root, debootstrap and a running engine (scripts/docker/install_engine.sh).
set -euo pipefail

TAG="openenv-local/python:3.11-bookworm"
FORCE=0
SUITE="${OPENENV_DEBIAN_SUITE:-bookworm}"
APT_DIR="${OPENENV_APT_DIR:-/etc/apt}"
PRINT_MIRROR=0
CACHE="${OPENENV_DEBOOTSTRAP_CACHE-/var/cache/openenv-debootstrap}"
INCLUDE="python3,python3-venv,ca-certificates"

log() { printf '[build_base_image] %s\n' "$*" >&2; }
die() { printf '[build_base_image] ERROR: %s\n' "$*" >&2; exit 1; }

# The first URI apt uses for "$SUITE" itself (not -security/-updates): deb822 stanzas in
# sources.list.d/*.sources, then one-line entries in sources.list.d/*.list and
# sources.list. Prints nothing when apt has none.
apt_mirror() {
    local f
    for f in "$APT_DIR"/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            function flush() {
                if (deb && uri != "" && has_suite && !done) { print uri; done = 1 }
                deb = 0; uri = ""; has_suite = 0
            }
            /^[[:space:]]*#/ { next }
            /^[[:space:]]*$/ { flush(); next }
            tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
            tolower($1) == "uris:" { uri = $2 }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == suite) has_suite = 1 }
            tolower($1) == "enabled:" && tolower($2) == "no" { deb = 0 }
            END { flush() }
        ' "$f"
    done
    for f in "$APT_DIR"/sources.list.d/*.list "$APT_DIR"/sources.list; do
        [ -f "$f" ] || continue
        awk -v suite="$SUITE" '
            $1 != "deb" { next }
            { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ } }
            $(i + 1) == suite { print $i }
        ' "$f"
    done
}

while [ $# -gt 0 ]; do
    case "$1" in
        --force) FORCE=1 ;;
        --tag) [ $# -ge 2 ] || die "--tag needs a value"; TAG="$2"; shift ;;
        --tag=*) TAG="${1#--tag=}" ;;
        -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
        --print-mirror) PRINT_MIRROR=1 ;;
        *) die "unknown argument: $1 (try --help)" ;;
    esac
    shift
done

if [ -n "${OPENENV_DEBIAN_MIRROR:-}" ]; then
    MIRROR="$OPENENV_DEBIAN_MIRROR"
else
    MIRROR="$(apt_mirror | head -n 1)"
    MIRROR="${MIRROR%/}"
    [ -n "$MIRROR" ] || MIRROR="http://deb.debian.org/debian"
fi
if [ "$PRINT_MIRROR" -eq 1 ]; then
    printf '%s\n' "$MIRROR"
    exit 0
fi

command -v docker >/dev/null 2>&1 || die "docker CLI not found; run scripts/docker/install_engine.sh"
timeout 10 docker info >/dev/null 2>&1 </dev/null \
    || die "no Docker engine answers; run scripts/docker/install_engine.sh"

if [ "$FORCE" -eq 0 ] && docker image inspect "$TAG" >/dev/null 2>&1; then
    log "$TAG already exists (use --force to rebuild)"
    exit 0
fi

[ "$(id -u)" -eq 0 ] || die "debootstrap needs root"
command -v debootstrap >/dev/null 2>&1 \
    || die "debootstrap not found; run scripts/docker/install_engine.sh (installs it) or apt-get install debootstrap"

WORK="${OPENENV_BASE_WORKDIR:-$(mktemp -d /var/tmp/openenv-rootfs.XXXXXX)}"
ROOTFS="$WORK/rootfs"
cleanup() { rm -rf --one-file-system "$WORK"; }
trap cleanup EXIT
mkdir -p "$ROOTFS"

cache_args=()
if [ -n "$CACHE" ]; then
    mkdir -p "$CACHE"
    cache_args=(--cache-dir="$CACHE")
fi

t0=$(date +%s)
log "debootstrap --variant=minbase $SUITE ($INCLUDE) from $MIRROR"
if ! debootstrap --variant=minbase --include="$INCLUDE" "${cache_args[@]}" \
        "$SUITE" "$ROOTFS" "$MIRROR" </dev/null >"$WORK/debootstrap.log" 2>&1; then
    tail -n 30 "$WORK/debootstrap.log" >&2
    [ -f "$ROOTFS/debootstrap/debootstrap.log" ] && tail -n 30 "$ROOTFS/debootstrap/debootstrap.log" >&2
    die "debootstrap failed"
fi
t1=$(date +%s)
log "debootstrap took $((t1 - t0))s"

# --- trim and neutralise host-specific files ----------------------------------
rm -rf "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/cache/apt/*.bin \
       "$ROOTFS"/var/cache/apt/archives/*.deb "$ROOTFS"/var/cache/apt/archives/partial/* \
       "$ROOTFS"/var/log/*.log "$ROOTFS"/var/log/apt/* "$ROOTFS"/tmp/* "$ROOTFS"/var/tmp/* \
       "$ROOTFS"/usr/share/doc/* "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/*
# Keep the stdlib's compiled .pyc files: images run with PYTHONDONTWRITEBYTECODE=1, so
# without them every container start recompiles the stdlib (~0.5 s).
# The engine bind-mounts these at run time; do not ship the host's copies.
: > "$ROOTFS/etc/resolv.conf"
: > "$ROOTFS/etc/hostname"
# Same convenience as python:3.11-slim: `python` works too (Dockerfiles still use python3).
[ -e "$ROOTFS/usr/local/bin/python" ] || ln -s /usr/bin/python3 "$ROOTFS/usr/local/bin/python"
# Keep apt able to work later inside the image (lists were removed above).
printf 'deb %s %s main\n' "$MIRROR" "$SUITE" > "$ROOTFS/etc/apt/sources.list"

[ -x "$ROOTFS/usr/bin/python3" ] || die "python3 missing from rootfs"
chroot "$ROOTFS" /usr/bin/python3 -c 'import venv, ensurepip, ssl, sys; print(sys.version)' >&2 \
    || die "python3 in rootfs cannot import venv/ensurepip/ssl"

# --- import -------------------------------------------------------------------
PY_VER="$(chroot "$ROOTFS" /usr/bin/python3 -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')"
log "docker import -> $TAG (python $PY_VER)"
tar --numeric-owner -C "$ROOTFS" \
    --exclude='./dev/*' --exclude='./proc/*' --exclude='./sys/*' --exclude='./run/*' \
    -cf - . \
  | docker import \
        --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
        --change 'ENV LANG=C.UTF-8' \
        --change "ENV PYTHON_VERSION=$PY_VER" \
        --change "LABEL org.opencontainers.image.title=openenv-local-python org.opencontainers.image.description=debootstrap-minbase-$SUITE-python3" \
        --change 'CMD ["python3"]' \
        --message "openenv local base: debootstrap minbase $SUITE + $INCLUDE" \
        - "$TAG" >/dev/null
t2=$(date +%s)
log "import took $((t2 - t1))s"

docker run --rm --network none "$TAG" python3 -c 'import sys, venv, ssl; print("python3", sys.version.split()[0], "ok")' \
    || die "smoke test of $TAG failed"
log "built $TAG ($(docker image inspect --format '{{.Size}}' "$TAG" | awk '{printf "%.0f MB", $1/1e6}')) in $((t2 - t0))s"

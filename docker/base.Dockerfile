# OpenEnv runtime base image.
#
# Build context: a wheelhouse directory made by scripts/docker/build_wheelhouse.sh
# (default .wheelhouse/), NOT the repository root:
#
#   .wheelhouse/
#     *.whl             wheels for Python 3.11 / glibc (runtime deps, dumb-init,
#                       optionally wheels of local projects such as openenv)
#     requirements.txt  pinned deps to install (written by build_wheelhouse.sh)
#     local.txt         name==version of the local project wheels (informational)
#     openenv-install-env  the script env Dockerfiles install their context with
#                       (docker/openenv-install-env; becomes /opt/venv/bin/openenv-install-env)
#
#   scripts/docker/build_wheelhouse.sh .wheelhouse
#   docker build -f docker/base.Dockerfile -t openenv-base .wheelhouse
#   # offline, with the debootstrap base from scripts/docker/build_base_image.sh:
#   docker build --network none -f docker/base.Dockerfile \
#       --build-arg BASE_IMAGE=openenv-local/python:3.11-bookworm -t openenv-base .wheelhouse
#
# Build args:
#   BASE_IMAGE        any Debian-like image with python3 (3.11) + venv (default python:3.11-slim)
#   OPENENV_PACKAGES  extra distributions to install from the wheelhouse by name,
#                     e.g. "openenv echo-env" (see local.txt)
#
# pip never reaches the network here (--no-index); only the legacy builder's
# features are used (no RUN --mount, no heredocs), so it builds without BuildKit.
# The image has no server command of its own: per-env Dockerfiles set
# CMD ["openenv", "serve", "<env>"] (or pass a command to `docker run`).

ARG BASE_IMAGE=python:3.11-slim

# ---- build stage: venv from the wheelhouse --------------------------------------
FROM ${BASE_IMAGE} AS build
ARG OPENENV_PACKAGES=""
COPY . /wheels/
RUN set -eu; \
    if [ ! -f /wheels/requirements.txt ]; then \
        echo "ERROR: build context is not a wheelhouse (no requirements.txt); run scripts/docker/build_wheelhouse.sh and use its OUTDIR as the context" >&2; \
        exit 1; \
    fi; \
    python3 -m venv /opt/venv; \
    PIP_CONFIG_FILE=/dev/null /opt/venv/bin/python3 -m pip install \
        --no-index --find-links /wheels --only-binary=:all: \
        --no-cache-dir --disable-pip-version-check \
        -r /wheels/requirements.txt ${OPENENV_PACKAGES}; \
    /opt/venv/bin/dumb-init --version; \
    if [ ! -f /wheels/openenv-install-env ]; then \
        echo "ERROR: build context has no openenv-install-env (docker/openenv-install-env); run scripts/docker/build_wheelhouse.sh again" >&2; \
        exit 1; \
    fi; \
    install -m 0755 /wheels/openenv-install-env /opt/venv/bin/openenv-install-env; \
    /opt/venv/bin/python3 -c "import uvicorn, websockets, pydantic, orjson, msgpack"

# ---- runtime stage ------------------------------------------------------------
# Metadata first, while the image is smallest: on the vfs storage driver every
# instruction (even ENV/EXPOSE) copies the whole rootfs, so their order matters
# for build time. USER comes after the RUN that creates the user; COPY is not
# affected by USER (files stay root-owned and read-only to uid 1000).
FROM ${BASE_IMAGE}

ENV VIRTUAL_ENV=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    OPENENV_HOST=0.0.0.0 \
    OPENENV_PORT=8000
WORKDIR /app
EXPOSE 8000

# No curl needed: python's urllib; any non-2xx answer or connection error fails.
HEALTHCHECK --interval=10s --timeout=3s --start-period=15s --retries=3 \
    CMD ["python3", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/health' % os.environ.get('OPENENV_PORT', '8000'), timeout=2).read()"]

# dumb-init (from the dumb-init wheel) is PID 1: it reaps zombies and forwards
# signals (SIGTERM from `docker stop`) to the server's process group.
ENTRYPOINT ["/opt/venv/bin/dumb-init", "--"]
CMD ["python3", "-c", "import sys; sys.exit('openenv base image: give a command, e.g. openenv serve <env> (per-env Dockerfiles set CMD)')"]

# Non-root user uid/gid 1000 ("openenv"). useradd is missing from some minimal
# bases; then write the passwd/group lines directly. An existing uid 1000 is reused.
RUN set -eu; \
    if getent passwd 1000 >/dev/null 2>&1; then \
        echo "uid 1000 exists already: $(getent passwd 1000)"; \
    elif command -v useradd >/dev/null 2>&1 && command -v groupadd >/dev/null 2>&1; then \
        getent group 1000 >/dev/null 2>&1 || groupadd --gid 1000 openenv; \
        useradd --uid 1000 --gid 1000 --create-home --home-dir /home/openenv \
            --shell /usr/sbin/nologin openenv; \
    else \
        grep -q '^[^:]*:[^:]*:1000:' /etc/group || echo 'openenv:x:1000:' >> /etc/group; \
        echo 'openenv:x:1000:1000:openenv:/home/openenv:/usr/sbin/nologin' >> /etc/passwd; \
        mkdir -p /home/openenv; \
        chown 1000:1000 /home/openenv; \
    fi; \
    chown 1000:1000 /app; \
    python3 -m compileall -q -j 0 "$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])')" \
        >/dev/null 2>&1 || true
USER 1000:1000

COPY --from=build /opt/venv /opt/venv

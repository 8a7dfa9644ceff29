"""``openenv build``, ``run``, ``ps``, ``stop`` and ``gc``: argument parsing and output only."""

from __future__ import annotations

import argparse
import difflib
import sys
from typing import Any


def _fail(command: str, message: str, code: int = 1) -> int:
    print(f"openenv {command}: {message}", file=sys.stderr)
    return code


def _local_tags(client: Any) -> list[str] | None:
    """The image tags this engine holds (``name`` and ``name:tag``); None when it cannot say."""
    try:  # one listing call: images.list() inspects each, and one removed meanwhile raised
        images = client.api.images()
    except Exception:
        return None
    tags: set[str] = set()
    for image in images:
        for tag in image.get("RepoTags") or ():
            if tag == "<none>:<none>":
                continue
            tags.add(tag)
            tags.add(tag.rsplit(":", 1)[0])  # the repository: what a name without a tag means
    return sorted(tags)


def _image_missing_line(image: str, provider: Any, why: str) -> str | None:
    """One line saying the image is not here (with the close local names) when that is
    why the start failed; None when the image is here, or the engine cannot say (the
    failure was something else)."""
    try:
        client = provider.client
        import docker.errors
    except Exception:
        return None
    try:
        client.images.get(image)
        return None
    except docker.errors.ImageNotFound:
        pass
    except Exception:
        return None
    tags = [t for t in _local_tags(client) or [] if (":" in t) == (":" in image.rsplit("/", 1)[-1])]
    close = difflib.get_close_matches(image, tags, n=3, cutoff=0.6)
    hint = f"did you mean {' or '.join(close)}? " if close else ""
    reason = why.split(": ", 1)[-1] if why.startswith("docker could not start") else why
    return (
        f"no image {image!r} here ({hint}`docker images` lists them; `openenv build ENV_FOLDER` "
        f"makes one), and it could not be pulled: {reason}"
    )


def _env_pairs(items: list[str] | None) -> dict[str, str] | str:
    """``-e KEY=VALUE`` items as a dict, or the line saying which one is malformed."""
    env: dict[str, str] = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            return f"-e {item!r} is not KEY=VALUE"
        env[key] = value
    return env


def _run(args: argparse.Namespace) -> int:
    import signal
    import time

    from .._exceptions import ProviderError
    from . import DockerProvider

    env = _env_pairs(args.env)
    if isinstance(env, str):
        return _fail("run", env, 2)
    # A detached container outlives this process: no host:pid owner, so `openenv gc`
    # does not take it for a crashed client's orphan (`openenv gc --all` removes it).
    labels = {"openenv.owner": "detached"} if args.detach else None
    provider = DockerProvider(
        args.image,
        env=env,
        cpus=args.cpus,
        memory=args.memory,
        start_timeout_s=args.start_timeout,
        labels=labels,
    )
    try:
        replica = provider.start()
    except ProviderError as exc:
        missing = _image_missing_line(args.image, provider, str(exc))
        return _fail("run", missing, 2) if missing else _fail("run", str(exc))
    name = replica.container.name
    print(f"{name} {replica.base_url}", flush=True)
    if args.detach:
        replica.detach()  # otherwise the atexit hook stops it as this process exits
        print(f"container {name} left running; `openenv stop {name}` stops it", file=sys.stderr)
        return 0
    print(f"serving {args.image} (container {replica.id[:12]}); Ctrl-C stops it", file=sys.stderr)
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    try:
        while replica.alive():
            time.sleep(1.0)
    except (KeyboardInterrupt, SystemExit):
        pass
    finally:
        replica.stop()
    return 0


def _build(args: argparse.Namespace) -> int:
    import os

    from .._exceptions import ProviderError
    from . import DEFAULT_BASE_IMAGE, build_env_image

    base = args.base_image or os.environ.get("OPENENV_BASE_IMAGE") or DEFAULT_BASE_IMAGE
    if not os.path.isdir(args.env):  # bad input, before any engine is asked
        return _fail("build", f"no env folder {args.env!r}", 2)
    try:
        tag = build_env_image(
            args.env,
            tag=args.tag,
            base_image=base,
            rebuild_base=args.rebuild_base,
            no_cache=args.no_cache,
            progress=lambda line: print(line, file=sys.stderr),
        )
    except ProviderError as exc:
        return _fail("build", str(exc))
    print(tag)
    return 0


def _gc(args: argparse.Namespace) -> int:
    from .._exceptions import ProviderError
    from . import gc, gc_images

    try:
        removed = gc(all_owners=args.all)
        images = gc_images(task=args.task) if args.images or args.task else []
    except ProviderError as exc:
        return _fail("gc", str(exc))
    for name in removed:
        print(f"removed {name}")
    for name in images:
        print(f"removed image {name}")
    print(f"{len(removed)} container(s) removed", file=sys.stderr)
    if args.images or args.task:
        print(f"{len(images)} task image(s) removed", file=sys.stderr)
    return 0


def _ps(args: argparse.Namespace) -> int:
    from .._exceptions import ProviderError
    from . import containers

    try:
        rows = containers()
    except ProviderError as exc:
        return _fail("ps", str(exc))
    table = [("NAME", "IMAGE", "URL", "STATUS", "OWNER")]
    table += [(c.name, c.image, c.url or "-", c.status, c.owner or "-") for c in rows]
    widths = [max(len(row[i]) for row in table) for i in range(4)]
    for row in table:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False)) + "  " + row[4])
    return 0


def _stop(args: argparse.Namespace) -> int:
    from .._exceptions import ProviderError
    from . import stop_container

    try:
        stop_container(args.name, timeout_s=args.timeout)
    except ProviderError as exc:
        return _fail("stop", str(exc))
    print(f"stopped {args.name}")
    return 0


def add_commands(sub: Any) -> None:
    """Register ``build``, ``run``, ``ps``, ``stop`` and ``gc`` on the CLI's subparsers."""
    p = sub.add_parser("build", help="build the Docker image of an env folder (no network in the build)")
    p.add_argument("env", help="the env folder (with pyproject.toml and Dockerfile)")
    p.add_argument("-t", "--tag", help="image tag (default openenv-<name>)")
    p.add_argument(
        "--base-image", help="python image to build on (default python:3.11-slim; OPENENV_BASE_IMAGE)"
    )
    p.add_argument("--rebuild-base", action="store_true", help="rebuild the shared base image")
    p.add_argument("--no-cache", action="store_true", help="do not use Docker's build cache")
    p.set_defaults(func=_build)

    p = sub.add_parser("run", help="run an env image as a container and print its URL")
    p.add_argument("image")
    p.add_argument("-e", "--env", action="append", metavar="KEY=VALUE", help="server environment variable")
    p.add_argument("--cpus", type=float, help="CPU limit, e.g. 1.5")
    p.add_argument("--memory", help="memory limit, e.g. 512m")
    p.add_argument("--start-timeout", type=float, default=60.0, help="seconds to wait for /health")
    p.add_argument(
        "-d", "--detach", action="store_true", help="print the container name and URL and leave it running"
    )
    p.set_defaults(func=_run)

    p = sub.add_parser("ps", help="list the project's env containers: name, image, URL, status, owner")
    p.set_defaults(func=_ps)

    p = sub.add_parser("stop", help="stop and remove one env container (see `openenv ps`)")
    p.add_argument("name", help="the container's name or ID")
    p.add_argument("--timeout", type=float, default=10.0, help="seconds before the stop becomes a kill")
    p.set_defaults(func=_stop)

    p = sub.add_parser("gc", help="remove env containers left behind by crashed clients")
    p.add_argument("--all", action="store_true", help="remove every openenv-managed container")
    p.add_argument(
        "--images",
        action="store_true",
        help="also remove the terminal env's task images (openenv-task-*) no container uses "
        "(a cache: a task builds its image again when next reset)",
    )
    p.add_argument("--task", metavar="ID", help="with --images: only this task's images (implies --images)")
    p.set_defaults(func=_gc)

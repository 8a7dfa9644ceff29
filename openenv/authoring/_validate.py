"""``openenv validate``: deep conformance checks of a running server or an env folder.

A URL is checked as it is (ours, upstream's, or anything claiming the protocol). A
folder is first checked for the files ``openenv init`` makes, then served by
``python -m openenv serve <folder>`` on a free loopback port and checked by URL.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._exceptions import ManifestError, ProbeError
from .._extras import require
from .._manifest import MANIFEST, load_manifest
from ._checks import Context, check_health
from ._checks_extra import CHECKS
from ._probe import http
from ._report import Outcome, Report


def validate_url(
    url: str,
    *,
    actions: list[dict[str, Any]] | None = None,
    deterministic: bool | None = None,
    max_steps: int = 5,
    timeout_s: float = 10.0,
    headers: dict[str, str] | None = None,
    report: Report | None = None,
    served_here: bool = False,
) -> Report:
    """Run every check against the server at ``url``.

    Args:
        actions: the actions to step with (cycled); default: one made from the schema.
        deterministic: True when the env claims equal replies under equal seeds (a
            divergence then fails); None reports a divergence as a warning.
        max_steps: longest episode the episode check runs.
        timeout_s: limit on each request and reply.
        headers: sent with every request (e.g. ``Authorization`` for a private Space).
    """
    require("jsonschema", extra="authoring", feature="openenv validate")
    url = url.rstrip("/")
    if url.startswith("ws"):
        url = "http" + url[2:].removesuffix("/ws")
    ctx = Context(
        url=url,
        report=report or Report(url),
        timeout_s=timeout_s,
        max_steps=max_steps,
        deterministic=deterministic,
        actions=list(actions or []),
        headers=dict(headers or {}),
        served_here=served_here,
    )
    for check in CHECKS:
        check(ctx)
        if check is check_health and not ctx.report.ok:
            break  # nothing else can answer
    return ctx.report


def check_folder(folder: Path, report: Report) -> bool | None:
    """The files of an env folder; returns the manifest's ``deterministic`` claim.

    A broken manifest or no entry point fails; a missing manifest, Dockerfile or README
    only warns (the env still serves; ``push`` and ``build`` need them).
    """
    claim: bool | None = None
    if not (folder / MANIFEST).is_file():
        report.add("manifest", Outcome.WARN, f"no {MANIFEST} (openenv push needs one; init makes one)")
    else:
        try:
            manifest = load_manifest(folder)
            claim = manifest.deterministic or None
            served = f" ({manifest.env})" if manifest.env else ""
            report.add("manifest", Outcome.PASS, f"{MANIFEST}: {manifest.name}{served}")
        except ManifestError as exc:
            report.add("manifest", Outcome.FAIL, str(exc))
    entry = None
    if (folder / "pyproject.toml").is_file():
        with (folder / "pyproject.toml").open("rb") as f:
            project = tomllib.load(f).get("project", {})
        entry = project.get("entry-points", {}).get("openenv.envs")
    from ..containers._build_upstream import is_upstream_folder

    if not entry and is_upstream_folder(folder):
        report.add(
            "files",
            Outcome.PASS,
            "upstream OpenEnv layout: openenv.yaml and server/app.py "
            "(openenv build makes its image; openenv serve serves it through openenv.core)",
        )
        return claim
    if not entry:
        report.add("files", Outcome.FAIL, 'no pyproject.toml with [project.entry-points."openenv.envs"]')
        return claim
    missing = [name for name in ("Dockerfile", "README.md") if not (folder / name).is_file()]
    if missing:
        details = [f"{n} is missing" for n in missing]
        report.add("files", Outcome.WARN, f"{' and '.join(missing)} missing", details)
    else:
        report.add("files", Outcome.PASS, "pyproject.toml (openenv.envs entry point), Dockerfile, README")
    return claim


def validate_path(folder: str | Path, *, start_timeout_s: float = 60.0, **options: Any) -> Report:
    """Check an env folder's files, serve it, and run ``validate_url`` on it."""
    path = Path(folder).resolve()
    report = Report(str(folder))
    claim = check_folder(path, report)
    if options.get("deterministic") is None:
        options["deterministic"] = claim
    try:
        with serve_folder(path, start_timeout_s) as url:
            report.add("serve", Outcome.PASS, f"openenv serve {folder} -> {url}")
            return validate_url(url, report=report, served_here=True, **options)
    except ProbeError as exc:
        report.add("serve", Outcome.FAIL, str(exc))
        return report


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def serve_folder(folder: Path | str, start_timeout_s: float = 60.0) -> Iterator[str]:
    """``python -m openenv serve <folder>`` on a free loopback port; yields its URL.

    ``folder`` may also be any other ``serve`` target (``module:Class``, an env's name).
    """
    with serve_process(folder, start_timeout_s) as (url, _proc):
        yield url


@contextlib.contextmanager
def serve_process(
    folder: Path | str, start_timeout_s: float = 60.0
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``serve_folder``, yielding the server's process too (its memory is measured)."""
    port = _free_port()
    cmd = [sys.executable, "-m", "openenv", "serve", str(folder), "--host", "127.0.0.1", "--port", str(port)]
    cwd = folder if isinstance(folder, Path) else None
    env = {**os.environ, "OPENENV_IDLE_TIMEOUT_S": "0", "OPENENV_LOG_LEVEL": "warning"}
    with tempfile.TemporaryFile() as log:
        # cwd is the folder: from its parent, ``-m`` would let the folder itself shadow
        # the package of the same name as a namespace package.
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, cwd=cwd
        )
        try:
            url = f"http://127.0.0.1:{port}"
            _wait_healthy(proc, url, start_timeout_s, log)
            yield url, proc
        finally:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(5)


def _wait_healthy(proc: subprocess.Popen[bytes], url: str, timeout_s: float, log: Any) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        if proc.poll() is not None:
            log.seek(0)
            tail = log.read().decode(errors="replace")[-2000:]
            raise ProbeError(f"openenv serve exited with {proc.returncode}:\n{tail}")
        with contextlib.suppress(ProbeError):
            if http("GET", url + "/health", timeout_s=2).status == 200:
                return
        if time.monotonic() > deadline:
            raise ProbeError(f"openenv serve not healthy after {timeout_s} s")
        time.sleep(0.05)


def validate_target(target: str, *, start_timeout_s: float = 60.0, **options: Any) -> Report:
    """Serve ``module:Class`` or an installed env's name, and run ``validate_url`` on it."""
    report = Report(target)
    try:
        with serve_folder(target, start_timeout_s) as url:
            report.add("serve", Outcome.PASS, f"openenv serve {target} -> {url}")
            return validate_url(url, report=report, served_here=True, **options)
    except ProbeError as exc:
        report.add("serve", Outcome.FAIL, str(exc))
        return report


def validate(target: str, **options: Any) -> Report:
    """By URL (``http(s)://``, ``ws(s)://``), by folder, or by ``serve`` target."""
    if "://" in target:
        return validate_url(target, **options)
    if Path(target).is_dir():
        return validate_path(target, **options)
    return validate_target(target, **options)

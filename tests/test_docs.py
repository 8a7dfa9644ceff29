"""Every shell command and Python block in README.md and docs/*.md runs as written.

One page is one test: its ``bash``/``sh``/``python`` blocks run in page order in a
scratch directory that mirrors the repository (symlinks; ``envs/`` is a real folder of
symlinks, so a block may add an env there), with ``.venv/bin`` first on ``PATH``.
Python blocks of a page share one namespace and may use top-level ``await``. The docs'
port ``8000`` becomes a free loopback port (also ``OPENENV_PORT``). Blocks are
changed by an HTML comment just before their fence (tests/_docblocks.py):

* ``<!-- docs-test: skip REASON -->``: not run, and REASON says why (a Hub account, a GPU);
* ``<!-- docs-test: background -->``: a server, started, waited on (``/health`` on the
  page's port) and stopped at the end of the page (or by the next background block);
* ``<!-- docs-test: expect -->``: the next ```` ```text ```` block is its output (every
  non-empty line, in order; ``...`` matches anything);
* ``<!-- docs-test: timeout 300 -->``: this block's bound in seconds (default 120);
* ``<!-- docs-test: docker -->``: needs a Docker engine (without one the page is
  reported as skipped, and under ``CI=true`` as failed); ``OPENENV_BASE_IMAGE`` is the
  offline base of scripts/docker/build_base_image.sh when it exists, as in tests/docker.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import io
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from ._docblocks import KNOWN_MARKERS, Block, blocks, expected_lines_found, parse_markers, with_port
from .conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
BIN = Path(sys.executable).parent
LOCAL_BASE_IMAGE = "openenv-local/python:3.11-bookworm"
#: Not linked into the scratch dir: envs/ is a real folder there; the rest are outputs.
NOT_MIRRORED = frozenset({"envs", "build", "runs"})


def _docker_engine() -> str | None:
    """None when a Docker engine answers, else why not."""
    try:
        import docker

        with contextlib.closing(docker.from_env(timeout=10)) as client:
            client.ping()
    except Exception as exc:
        return f"no Docker engine answers ({type(exc).__name__})"
    return None


def _local_base_image() -> str | None:
    """``openenv-local/python:3.11-bookworm`` when scripts/docker/build_base_image.sh made it."""
    try:
        import docker

        with contextlib.closing(docker.from_env(timeout=10)) as client:
            client.images.get(LOCAL_BASE_IMAGE)
    except Exception:
        return None
    return LOCAL_BASE_IMAGE


class PageRun:
    """The scratch directory, environment, namespace and server of one page's run."""

    def __init__(self, scratch: Path) -> None:
        self.dir = scratch
        self.port = free_port()
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self.server: subprocess.Popen[bytes] | None = None
        self.server_log = scratch.parent / "server.log"
        env = {k: v for k, v in os.environ.items() if not k.startswith("OPENENV_")}
        env["PATH"] = f"{BIN}{os.pathsep}{env.get('PATH', '')}"
        env["OPENENV_PORT"] = str(self.port)
        env.pop("PYTHONPATH", None)
        base = os.environ.get("OPENENV_BASE_IMAGE") or _local_base_image()
        if base:  # as tests/docker: the offline base where there is one (no registry in CI)
            env["OPENENV_BASE_IMAGE"] = base
        self.env = env
        scratch.mkdir()
        for item in ROOT.iterdir():
            if item.name.startswith(".") or item.name in NOT_MIRRORED or item.suffix == ".egg-info":
                continue
            (scratch / item.name).symlink_to(item)
        (scratch / "envs").mkdir()
        for item in (ROOT / "envs").iterdir():
            if item.is_dir() and not item.name.startswith((".", "_")):
                (scratch / "envs" / item.name).symlink_to(item)

    def run(self, block: Block) -> str:
        code = with_port(block.code, self.port)
        if block.lang == "python":
            return self._python(block, code)
        if "background" in block.markers:
            return self._background(block, code)
        try:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", code],
                cwd=self.dir,
                env=self.env,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                timeout=block.timeout_s,
            )
        except subprocess.TimeoutExpired as exc:
            pytest.fail(f"{block.where}: still running after {block.timeout_s:g} s:\n{_tail(exc.output)}")
        out = done.stdout.decode(errors="replace")
        if done.returncode != 0:
            pytest.fail(f"{block.where}: exit status {done.returncode}:\n{code}\n{_tail(out)}")
        return out

    def _python(self, block: Block, code: str) -> str:
        compiled = compile(code, block.where, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            result = eval(compiled, self.namespace)
            if asyncio.iscoroutine(result):
                asyncio.run(result)
        sys.stdout.write(out.getvalue())
        return out.getvalue()

    def _background(self, block: Block, code: str) -> str:
        self.stop_server()
        log = self.server_log.open("wb")
        self.server = subprocess.Popen(
            ["bash", "-c", code],
            cwd=self.dir,
            env=self.env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        url = f"http://127.0.0.1:{self.port}/health"
        deadline = time.monotonic() + block.timeout_s
        while True:
            if self.server.poll() is not None:
                pytest.fail(
                    f"{block.where}: the server exited with {self.server.returncode}:\n"
                    f"{_tail(self.server_log.read_bytes())}"
                )
            with contextlib.suppress(httpx.TransportError):
                if httpx.get(url, timeout=2).status_code == 200:
                    break
            if time.monotonic() > deadline:
                pytest.fail(f"{block.where}: {url} did not answer in {block.timeout_s:g} s")
            time.sleep(0.2)
        if block.expected is not None:  # the start-up line may follow the first answer
            settle, expected = time.monotonic() + 5, with_port(block.expected, self.port)
            while expected_lines_found(expected, self.server_output()) and time.monotonic() < settle:
                time.sleep(0.1)
        return self.server_output()

    def server_output(self) -> str:
        return self.server_log.read_bytes().decode(errors="replace")

    def stop_server(self) -> None:
        proc, self.server = self.server, None
        if proc is None or proc.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def _tail(data: bytes | str | None, lines: int = 40) -> str:
    text = data.decode(errors="replace") if isinstance(data, bytes) else (data or "")
    return "\n".join(text.splitlines()[-lines:])


def _page_blocks(page: str) -> list[Block]:
    return blocks(ROOT / page, ROOT)


# --- the convention itself -----------------------------------------------------------------


@pytest.mark.parametrize("page", PAGES)
def test_every_block_runs_or_says_why_not(page: str) -> None:
    for block in _page_blocks(page):
        unknown = set(block.markers) - set(KNOWN_MARKERS)
        assert not unknown, f"{block.where}: unknown docs-test marker(s) {sorted(unknown)}"
        if "skip" in block.markers:
            assert block.runnable, f"{block.where}: only bash/sh/python blocks run; no skip needed"
            assert len(block.skip_reason or "") >= 8, f"{block.where}: a skip must say why"
        if "expect" in block.markers:
            assert block.expected is not None, f"{block.where}: 'expect' needs a ```text block after it"
        if "background" in block.markers:
            assert block.lang in ("bash", "sh"), f"{block.where}: only a shell block can be a server"


def test_markers_parse_and_expected_output_matches() -> None:
    assert parse_markers("expect; timeout 300") == {"expect": "", "timeout": "300"}
    assert parse_markers("skip needs a GPU") == {"skip": "needs a GPU"}
    assert parse_markers("docker; skip a; b") == {"docker": "", "skip": "a; b"}
    assert expected_lines_found("a ... c\n\nlast", "x\na b c\ny\nlast line") is None
    assert expected_lines_found("last\nfirst", "first\nlast") == "first"  # order counts
    assert with_port("curl http://127.0.0.1:8000/x --port 8000 -p 8000:8000", 9) == (
        "curl http://127.0.0.1:9/x --port 9 -p 8000:8000"
    )


def test_a_marker_belongs_only_to_the_block_right_after_it(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "<!-- docs-test: skip needs a GPU -->\n```bash\nnvidia-smi\n```\n\n"
        "<!-- docs-test: expect -->\ntext between\n```bash\necho hi\n```\n"
        "<!-- docs-test: expect -->\n```python\nprint('hi')\n```\n```text\nhi\n```\n"
    )
    first, second, third, text = blocks(page, tmp_path)
    assert (first.skip_reason, first.code) == ("needs a GPU", "nvidia-smi\n")
    assert second.markers == {}
    assert (third.expected, text.lang) == ("hi\n", "text")


# --- the pages -----------------------------------------------------------------------------


def _to_run(page: str) -> list[Block]:
    return [b for b in _page_blocks(page) if b.runnable and "skip" not in b.markers]


#: The pages with a block to run (the others hold only data and blocks that say why not).
RUN_PAGES = [page for page in PAGES if _to_run(page)]


def test_the_readme_and_the_quickstart_run() -> None:
    assert {"README.md", "docs/quickstart.md"} <= set(RUN_PAGES)


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs_as_written(page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    todo = _to_run(page)
    if any("docker" in b.markers for b in todo) and (why := _docker_engine()):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{page} needs a Docker engine, and CI=true: {why}")
        pytest.skip(f"{page} needs a Docker engine: {why}")
    run = PageRun(tmp_path / "work")
    monkeypatch.chdir(run.dir)
    monkeypatch.syspath_prepend(str(run.dir))
    try:
        for block in todo:
            out = run.run(block)
            expected = None if block.expected is None else with_port(block.expected, run.port)
            if expected is not None and (missing := expected_lines_found(expected, out)):
                pytest.fail(f"{block.where}: expected output line {missing!r} not in:\n{_tail(out)}")
    finally:
        run.stop_server()

"""Every shell command and Python block in README.md and docs/*.md runs as written.

One page is one test: its ``bash``/``sh``/``python`` blocks run in page order in a
scratch directory that mirrors the repository (symlinks; ``envs/`` is a real folder of
symlinks, so a block may add an env there), in a venv that holds exactly what the page
has told its reader to install (``venv`` marker, tests/_docvenv.py; by default what
README's first command, scripts/demo.sh, installs), its ``bin`` first on ``PATH``: a
page that needs something it never names fails, as it would for the reader. Python
blocks run in that venv's interpreter (tests/_docdriver.py), share one namespace and
may use top-level ``await``. The docs'
port ``8000`` becomes a free loopback port (also ``OPENENV_PORT``), and each other loopback
port it names (8001, 8100, ...) another, the same for the whole page. Blocks are
changed by an HTML comment just before their fence (tests/_docblocks.py):

* ``<!-- docs-test: skip REASON -->``: not run, and REASON says why (a Hub account, a GPU);
* ``<!-- docs-test: background -->``: a server, started, waited on (``/health`` on the
  page's port) and stopped at the end of the page (or by the next background block);
* ``<!-- docs-test: expect -->``: the next ```` ```text ```` block is its output (every
  non-empty line, in order; ``...`` matches anything);
* ``<!-- docs-test: timeout 300 -->``: this block's bound in seconds (default 120);
* ``<!-- docs-test: venv EXTRAS [+envs] -->``: from here on, the reader has
  ``pip install 'openenv[EXTRAS]'`` (and, with ``+envs``, every env of ``envs/``);
* ``<!-- docs-test: docker -->``: needs a Docker engine (without one the page is
  reported as skipped, and under ``CI=true`` as failed); ``OPENENV_BASE_IMAGE`` is the
  offline base of scripts/docker/build_base_image.sh when it exists, as in tests/docker.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from . import _docvenv
from ._docblocks import KNOWN_MARKERS, Block, blocks, expected_lines_found, parse_markers, with_port
from .conftest import free_port

ROOT = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs").glob("*.md"))]
DRIVER = Path(__file__).with_name("_docdriver.py")
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

    def __init__(self, scratch: Path, pool: _docvenv.Pool) -> None:
        self.dir = scratch
        self.pool = pool
        self.port = free_port()
        self.ports = {8000: self.port}  # the docs' other ports get free ones as the page names them
        self.namespace: dict[str, Any] = {"__name__": "__docs__"}
        self.server: subprocess.Popen[bytes] | None = None
        self.server_log = scratch.parent / "server.log"
        self.venv: str | None = None  # the profile of the venv in use
        self.profiles: list[str] = []  # every profile this page used
        self.driver: subprocess.Popen[str] | None = None
        self.replies: queue.Queue[str] = queue.Queue()
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OPENENV_", "VIRTUAL_ENV"))}
        self.path = env.get("PATH", "")
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

    def use_venv(self, profile: str) -> None:
        """Build the venv ``profile`` names (when it is not the one in use) and put it first."""
        if profile == self.venv:
            return
        self.stop_driver()
        venv = self.pool.take(profile)
        if profile not in self.profiles:
            self.profiles.append(profile)
        bin_dir = venv / "bin"
        self.env["PATH"] = f"{bin_dir}{os.pathsep}{self.path}"
        self.env["VIRTUAL_ENV"] = str(venv)  # as `source .venv/bin/activate` leaves it
        self.venv = profile

    def run(self, block: Block) -> str:
        self.use_venv(block.venv)
        code = with_port(block.code, self.ports, free_port)
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
        if self.driver is None or self.driver.poll() is not None:
            self.driver = subprocess.Popen(
                [str(Path(self.env["VIRTUAL_ENV"]) / "bin" / "python"), str(DRIVER)],
                cwd=self.dir, env=self.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=self.server_log.with_name("python.log").open("ab"), text=True,
            )
            self.replies = queue.Queue()
            out = self.driver.stdout
            threading.Thread(target=lambda: [self.replies.put(line) for line in out], daemon=True).start()
        assert self.driver.stdin is not None
        self.driver.stdin.write(json.dumps({"code": code, "where": block.where}) + "\n")
        self.driver.stdin.flush()
        try:
            reply = json.loads(self.replies.get(timeout=block.timeout_s))
        except queue.Empty:
            self.stop_driver()
            pytest.fail(f"{block.where}: still running after {block.timeout_s:g} s")
        except json.JSONDecodeError as exc:
            pytest.fail(f"{block.where}: the Python driver answered garbage: {exc}")
        if reply["error"]:
            pytest.fail(f"{block.where} raised, in the page's venv ({self.venv}):\n{reply['error']}")
        sys.stdout.write(reply["out"])
        return str(reply["out"])

    def stop_driver(self) -> None:
        driver, self.driver = self.driver, None
        if driver is None:
            return
        with contextlib.suppress(OSError):
            assert driver.stdin is not None
            driver.stdin.close()
        try:
            driver.wait(10)
        except subprocess.TimeoutExpired:
            driver.kill()
            driver.wait(5)

    def close(self) -> None:
        self.stop_server()
        self.stop_driver()
        for profile in self.profiles:
            self.pool.give_back(profile)

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
            settle, expected = time.monotonic() + 5, with_port(block.expected, self.ports, free_port)
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
    free = iter([21, 22])
    ports = {8000: 9}
    code = "serve --port 8001; curl localhost:8001 127.0.0.1:8000; X(port=8100); -p 8001:8001"
    mapped = "serve --port 21; curl localhost:21 127.0.0.1:9; X(port=22); -p 8001:8001"
    assert with_port(code, ports, lambda: next(free)) == mapped
    assert ports == {8000: 9, 8001: 21, 8100: 22}  # the same docs' port, the same free one, page-wide


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


@pytest.fixture(scope="module")
def venv_pool() -> Iterator[_docvenv.Pool]:
    """The pages' venvs, one a profile for the run (beside .venv: hard links need one file
    system; a tmpfs /tmp would mean copies), put in the trash at its end (the next run's
    pool empties it); a page that changed its venv leaves the next page a fresh one
    (tests/_docvenv.py)."""
    pool = _docvenv.Pool(_docvenv.CACHE)
    try:
        yield pool
    finally:
        pool.close()


@pytest.mark.timeout(1200)
@pytest.mark.parametrize("page", RUN_PAGES)
def test_page_runs_as_written(
    page: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, venv_pool: _docvenv.Pool
) -> None:
    todo = _to_run(page)
    if any("docker" in b.markers for b in todo) and (why := _docker_engine()):
        if os.environ.get("CI") == "true":
            pytest.fail(f"{page} needs a Docker engine, and CI=true: {why}")
        pytest.skip(f"{page} needs a Docker engine: {why}")
    run = PageRun(tmp_path / "work", venv_pool)
    monkeypatch.chdir(run.dir)
    try:
        for block in todo:
            out = run.run(block)
            expected = None if block.expected is None else with_port(block.expected, run.ports, free_port)
            if expected is not None and (missing := expected_lines_found(expected, out)):
                pytest.fail(f"{block.where}: expected output line {missing!r} not in:\n{_tail(out)}")
    finally:
        run.close()


def test_a_page_venv_holds_what_the_page_names_and_nothing_else(tmp_path: Path) -> None:
    """What the reader of hub.md has (``pip install 'openenv[hub]'`` in a fresh venv):
    the hub extra, a fresh venv's setuptools (no ``wheel``), no server and no pytest."""
    python = _docvenv.build(tmp_path / "hub", "hub") / "python"

    def imports(module: str) -> bool:
        return subprocess.run([str(python), "-c", f"import {module}"], capture_output=True,
                              timeout=60).returncode == 0

    assert imports("huggingface_hub")
    assert imports("yaml")
    assert imports("openenv.hub")
    for absent in ("starlette", "pytest", "wheel", "echo_env"):
        assert not imports(absent), f"{absent} is in a venv whose page never installs it"
    version = subprocess.run([str(python), "-c", "import setuptools; print(setuptools.__version__)"],
                             capture_output=True, text=True, timeout=60).stdout.strip()
    fresh = subprocess.run([str(_docvenv._fresh_venv(sys.executable) / "bin" / "python"), "-c",
                            "import setuptools; print(setuptools.__version__)"],
                           capture_output=True, text=True, timeout=60).stdout.strip()
    assert version == fresh  # as `python -m venv` gives it, not .venv's


def test_venv_markers_hold_until_the_next_one(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text(
        "```bash\na\n```\n<!-- docs-test: venv hub -->\ntext\n```bash\nb\n```\n"
        "<!-- docs-test: venv all +envs; skip installs it -->\n```bash\nc\n```\n```bash\nd\n```\n"
    )
    found = [(b.code.strip(), b.venv) for b in blocks(page, tmp_path)]
    assert found == [("a", "standard +envs"), ("b", "hub"), ("c", "all +envs"), ("d", "all +envs")]
    assert _docvenv.parse_profile("standard,train +envs") == (frozenset({"standard", "train"}), True)
    assert _docvenv.parse_profile("-") == (frozenset(), False)


def test_the_venv_pool_shares_a_venv_until_a_page_changes_it() -> None:
    """Pages that name one profile share its venv; one whose page installed something
    (a new distribution in site-packages) is dropped, and the next page gets a fresh one."""
    where = _docvenv.CACHE / f"probe-{os.getpid()}"  # its own trash, not the pages' pool's
    pool = _docvenv.Pool(where)
    try:
        first = pool.take("-")
        pool.give_back("-")
        assert pool.take("-") == first  # unchanged: shared
        (_docvenv._site_of(first) / "pytest-9.0.dist-info").mkdir()  # as `pip install pytest` leaves it
        pool.give_back("-")
        assert not first.exists()
        second = pool.take("-")
        assert second != first
        assert not (_docvenv._site_of(second) / "pytest-9.0.dist-info").exists()
    finally:
        pool.close()
    assert not second.exists()
    assert len(list((where / "trash").iterdir())) == 2  # both, out of the way until then:
    _docvenv.Pool(where)  # the next pool empties the trash
    assert not (where / "trash").exists()
    shutil.rmtree(where)

"""The README's training command, read from the README and run as written, learns on
the env it serves: the mean reward of its last 10 steps is far above its first 10.

The block's lines run in order in a scratch folder (``envs`` linked in, so its
``runs/...`` lands there), with ``.venv/bin`` first on ``PATH``. As in
tests/test_docs.py, the docs' port 8000 becomes a free loopback port and a line ending
in ``&`` is a server, waited on (``/health``) before the next line and stopped at the end.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .._docblocks import Block, blocks, with_port
from .._served import wait_served
from ..conftest import free_port

pytest.importorskip("torch", reason="the trainer needs torch (the 'train' extra)")
pytest.importorskip("monarch.actor", reason="the README's run has rollout workers (torchmonarch)")

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RUN_TIMEOUT_S = 900  # the README's 100 steps take about 1-2 min on 2 busy cores


def readme_train_block() -> Block:
    found = [
        b
        for b in blocks(ROOT / "docs" / "tour.md", ROOT)  # the README's tour
        if b.lang == "bash" and any(cmd[:2] == ["openenv", "train"] for cmd in commands(b.code))
    ]
    assert len(found) == 1, f"the README should show one training block, found {len(found)}"
    return found[0]


def commands(code: str) -> list[list[str]]:
    """The block's commands as argument lists (continuations joined, comments dropped);
    a background command keeps its trailing ``&``."""
    lines = code.replace("\\\n", " ").splitlines()
    return [words for line in lines if (words := shlex.split(line, comments=True))]


def flag(words: list[str], name: str) -> str:
    assert name in words, f"{name} not in {shlex.join(words)}"
    return words[words.index(name) + 1]


def test_the_block_serves_the_env_it_trains_on() -> None:
    cmds = commands(readme_train_block().code)
    serve = [c for c in cmds if c[:2] == ["openenv", "serve"]]
    train = [c for c in cmds if c[:2] == ["openenv", "train"] and "--env" in c]
    assert len(serve) == 1
    assert serve[0][-1] == "&", "the block starts the env's server in the background"
    assert serve[0][2] == "envs/arith_env"
    assert len(train) == 1
    assert flag(train[0], "--env") == "http://127.0.0.1:8000"
    assert cmds.index(serve[0]) < cmds.index(train[0])


@contextlib.contextmanager
def background(words: list[str], cwd: Path, env: dict[str, str], port: int) -> Iterator[None]:
    proc = subprocess.Popen(
        words, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        wait_served(f"http://127.0.0.1:{port}", proc, 60, shlex.join(words))
        yield
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        if proc.stderr is not None:
            proc.stderr.close()


@pytest.mark.slow
@pytest.mark.timeout(RUN_TIMEOUT_S + 120)
def test_the_readme_training_command_learns(tmp_path: Path) -> None:
    port = free_port()
    cmds = commands(with_port(readme_train_block().code, port))
    (tmp_path / "envs").symlink_to(ROOT / "envs")
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "OPENENV_PORT": str(port),  # the server's default port, as the docs tests set it
        "PYTHONUNBUFFERED": "1",
    }
    train = next(c for c in cmds if c[:2] == ["openenv", "train"] and "--env" in c)
    with contextlib.ExitStack() as servers:
        for words in cmds:
            if words[-1] == "&":
                servers.enter_context(background(words[:-1], tmp_path, env, port))
                continue
            done = subprocess.run(
                words, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=RUN_TIMEOUT_S
            )
            assert done.returncode == 0, f"{shlex.join(words)}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"

    out = tmp_path / flag(train, "--out")
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == list(range(int(flag(train, "--steps"))))
    assert all(r["failed"] == 0 and r["episodes"] > 0 for r in rows)
    rewards = [r["reward_mean"] for r in rows]
    first, last = statistics.fmean(rewards[:10]), statistics.fmean(rewards[-10:])
    print(f"\nREADME training run: mean reward {first:.3f} (first 10 steps) -> {last:.3f} (last 10)")
    # Answers are one character: 0.1 for a digit, 0.9 more for the exact sum. An
    # untrained model scores about 0.1; always answering the commonest sum scores 0.325,
    # so 0.5 needs most sums right.
    assert first < 0.25, rewards
    assert last > 0.5, rewards
    assert last - first > 0.3, rewards
    assert (out / "reward.png").is_file()  # the block's plot line drew it

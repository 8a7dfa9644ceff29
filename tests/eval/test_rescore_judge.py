"""``openenv eval rescore DIR --rubric judge:...``: a run's rewards from an LLM judge
(the official openai SDK against a scripted chat server, a test double), the reply kept
on each turn, the disk cache shared across runs, concurrency bounded, a refused key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest

pytest.importorskip("openai", reason="the eval extra brings the openai SDK")

from openenv.eval import load_trajectories

from ..rewards._scripted_llm import ScriptedLLM
from ._policies import echo_run

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


def _reply(prompt: str, n: int) -> str:
    """Scores the echoed message's length out of 12; a message of 7 gets no score."""
    length = len(prompt.removeprefix("Rate: "))
    return "hmm, hard to say" if length == 7 else f"ok <score>{length}</score>"


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    echo_run(out, "python:tests.eval._policies:seeded_echo", count=4, samples=3, max_turns=2)
    return out


def _rescore(run: Path, out: Path, spec: str, key: str = "k1") -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "openenv", "eval", "rescore", str(run), "--rubric", spec, "--out", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        env={**os.environ, "H14_JUDGE_KEY": key},
    )


def _spec(server: ScriptedLLM, **extra: str) -> str:
    options = {
        "base_url": server.url + "/v1",
        "api_key_env": "H14_JUDGE_KEY",
        "prompt": "Rate: {action.message}",
        "range": "0,12",
        "default": "0.5",
        "concurrency": "2",
        **extra,
    }
    return "judge:openai:grader?" + "&".join(f"{k}={quote(v)}" for k, v in options.items())


def test_rescore_with_a_judge_keeps_each_reply_and_caches_on_disk(run: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with ScriptedLLM(_reply, delay_s=0.05) as server:
        proc = _rescore(run, tmp_path / "a", _spec(server, cache_dir=str(cache)))
        assert proc.returncode == 0, proc.stderr
        distinct = {f"Rate: {turn.action['message']}" for t in load_trajectories(run) for turn in t.turns}  # type: ignore[index]
        assert sorted(server.prompts) == sorted(distinct)  # one request per distinct prompt
        assert 1 <= server.max_in_flight <= 2
        sent = len(server.prompts)
        again = _rescore(run, tmp_path / "b", _spec(server, cache_dir=str(cache)))
        assert again.returncode == 0, again.stderr
        assert len(server.prompts) == sent  # every reply from the disk cache
    old = {t.key: t for t in load_trajectories(run)}
    for folder in ("a", "b"):
        fresh = 0
        for t in load_trajectories(tmp_path / folder):
            expected = []
            for turn, before in zip(t.turns, old[t.key].turns, strict=True):
                n = len(before.action["message"])  # type: ignore[index]
                record = turn.judge["judge"]  # type: ignore[attr-defined]
                assert record["reply"] == _reply("Rate: " + "x" * n, 0)
                assert record["parsed"] == (n != 7)
                fresh += not record["cached"]
                expected.append(0.5 if n == 7 else n / 12)
            assert [turn.reward for turn in t.turns] == pytest.approx(expected)
            assert t.reward == pytest.approx(sum(expected))
        assert fresh == (len(distinct) if folder == "a" else 0)  # "b": every reply from the cache


def test_a_refused_key_is_one_line_exit_2_and_no_folder(run: Path, tmp_path: Path) -> None:
    with ScriptedLLM(_reply) as server:
        proc = _rescore(run, tmp_path / "new", _spec(server), key="wrong")
    assert proc.returncode == 2, proc.stderr
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("openenv eval: the judge model refused the key")
    assert not (tmp_path / "new").exists()


def test_a_bad_judge_spec_is_one_line_exit_2(run: Path, tmp_path: Path) -> None:
    proc = _rescore(run, tmp_path / "new", "judge:openai:m?base_url=http://127.0.0.1:9/v1&rnage=0,1")
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert "unknown option 'rnage'" in line

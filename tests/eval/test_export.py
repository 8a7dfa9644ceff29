"""``openenv eval export``: a run as Harbor's ATIF (validated by Harbor's own model, in a
Python 3.12 venv with ``harbor``, ``.venv-harbor``, made by the test command) and as upstream 0.10's
``openenv collect`` results.jsonl (read back by upstream's own serializer and record)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from openenv.eval import Trajectory, export, load_trajectories, to_atif, to_upstream

from ._policies import echo_run

ROOT = Path(__file__).resolve().parents[2]
HARBOR_VENV = ROOT / ".venv-harbor"
UPSTREAM_PY = ROOT / ".venv-upstream" / "bin" / "python"
pytestmark = pytest.mark.timeout(900)


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("run") / "run"
    echo_run(out, "python:tests.eval._policies:seeded_echo", count=2, samples=2, max_turns=3)
    return out


def _clean_env() -> dict[str, str]:
    """The environment without PYTHONPATH (the repo's openenv would shadow another's)."""
    return {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}


def _run_python(python: Path, code: str, *args: Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    """``python -c CODE ARGS`` in another venv, without this repo on its path."""
    argv = [str(python), "-c", code, *map(str, args)]
    return subprocess.run(argv, cwd=cwd, env=_clean_env(), capture_output=True, text=True, timeout=120)


def _with_tool_calls(t: Trajectory) -> Trajectory:
    """``t`` as a model policy would have written it: chat messages, a tool call with an
    id, sampled token ids and logprobs, and a judge's record (as rescore leaves it)."""
    new = t.model_copy(deep=True)
    turn = new.turns[0]
    turn.messages = [
        {"role": "user", "content": "Echo environment ready!"},
        {"role": "assistant", "content": "", "tool_calls": [{"id": "c1"}]},
    ]
    turn.tool_calls = [{"id": "c1", "name": "echo_action", "arguments": dict(turn.action or {})}]
    turn.token_ids, turn.logprobs = [5, 6, 2], [-0.1, -0.2, -0.3]
    turn.judge = {"judge": {"reply": "<score>1</score>", "parsed": True}}  # type: ignore[attr-defined]
    return new


def _harbor_python() -> Path:
    """Harbor's own venv, made by the test command (scripts/setup.d/56-harbor.sh); skips
    with the reason otherwise."""
    python = HARBOR_VENV / "bin" / "python"
    if not python.exists():
        pytest.skip(f"no Harbor venv at {HARBOR_VENV} (bash scripts/test.sh makes it: Python >= 3.12)")
    return python


def test_atif_export_validates_with_harbors_model(run: Path, tmp_path: Path) -> None:
    trajectories = load_trajectories(run)
    written = export(run, "atif", tmp_path / "atif")
    assert len(written) == len(trajectories) == 4
    extra = tmp_path / "atif" / "tools.json"
    extra.write_text(json.dumps(to_atif(_with_tool_calls(trajectories[0]))))
    check = (
        "import json, sys\n"
        "from harbor.models.trajectories import Trajectory\n"
        "for p in sys.argv[1:]:\n"
        "    t = Trajectory.model_validate(json.load(open(p)))\n"
        "    calls = sum(len(s.tool_calls or []) for s in t.steps)\n"
        "    print(len(t.steps), calls, t.final_metrics.total_steps)\n"
    )
    proc = _run_python(_harbor_python(), check, *written, extra, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    counts = [tuple(map(int, line.split())) for line in proc.stdout.splitlines()]
    assert counts[:4] == [(1 + len(t.turns), 0, 1 + len(t.turns)) for t in trajectories]
    assert counts[4][1] == 1
    doc = json.loads(written[0].read_text())
    t = trajectories[0]
    assert doc["steps"][1]["extra"]["action"] == t.turns[0].action
    assert doc["steps"][1]["extra"]["reward"] == t.turns[0].reward
    assert doc["final_metrics"]["extra"]["reward"] == t.reward
    tools = json.loads(extra.read_text())["steps"][1]
    assert tools["observation"]["results"][0]["source_call_id"] == "c1"
    assert tools["metrics"] == {"completion_token_ids": [5, 6, 2], "logprobs": [-0.1, -0.2, -0.3]}
    assert tools["extra"]["judge"]["judge"]["reply"] == "<score>1</score>"


@pytest.mark.skipif(
    not UPSTREAM_PY.exists(), reason="upstream OpenEnv 0.10 is in .venv-upstream (scripts/setup.sh)"
)
def test_upstream_export_reads_back_with_upstreams_collect(run: Path, tmp_path: Path) -> None:
    out = tmp_path / "up"
    export(run, "upstream", out)
    check = (
        "import json, sys\n"
        "from openenv.core.harness.collect import EpisodeRecord, RolloutSerializer\n"
        "ids = RolloutSerializer(sys.argv[1]).collected_episode_ids()\n"
        "records = [EpisodeRecord(**json.loads(l)) for l in open(sys.argv[1] + '/results.jsonl')]\n"
        "print(json.dumps({'ids': sorted(ids), 'rewards': [r.reward for r in records],\n"
        "                  'same': all(r.to_dict() == json.loads(l) for r, l in\n"
        "                              zip(records, open(sys.argv[1] + '/results.jsonl')))}))\n"
    )
    proc = _run_python(UPSTREAM_PY, check, out, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    got = json.loads(proc.stdout)
    trajectories = load_trajectories(run)
    assert got["ids"] == sorted(f"{t.task_id}-s{t.sample}" for t in trajectories)
    assert got["rewards"] == [t.reward for t in trajectories]
    assert got["same"]
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["num_episodes_requested"] == 4
    assert meta["model"] == trajectories[0].policy
    record = to_upstream(_with_tool_calls(trajectories[0]))
    assert record["tool_trace"][0]["tool_name"] == "echo_action"
    assert [m["role"] for m in record["messages"]][:2] == ["user", "assistant"]


def test_export_cli_and_a_bad_format(run: Path, tmp_path: Path) -> None:
    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "openenv", "eval", "export", str(run), *args],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
        )

    ok = cli("--format", "upstream", "--out", str(tmp_path / "u"))
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.strip() == f"2 files in {tmp_path / 'u'}"
    assert len((tmp_path / "u" / "results.jsonl").read_text().splitlines()) == 4
    bad = cli("--format", "csv")
    assert bad.returncode == 2
    assert bad.stderr.strip() == "openenv eval: --format 'csv' is not one of atif, upstream"

"""``openenv collect`` (upstream OpenEnv 0.10's command) over our eval runner: the
reasoning-gym env served on loopback, the scripted teacher and an OpenAI-compatible one
(``openenv policy serve``'s app over the tiny checkpoint), resume, upstream's own
serializer reading the folder back, and bad input as one line with exit status 2."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from openenv.cli import main
from openenv.eval import load_trajectories
from openenv.server import create_app, serve_in_background

rg_env = pytest.importorskip("reasoning_gym_env", reason="envs/reasoning_gym_env is installed by setup.sh")

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_PY = ROOT / ".venv-upstream" / "bin" / "python"
CONFIG = '{"min_terms": 4, "max_terms": 4}'


@pytest.fixture(scope="module")
def env_url():
    with serve_in_background(create_app(rg_env.ReasoningGymEnv)) as server:
        yield server.url


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_collect_scripted_then_resume(
    env_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "c"
    argv = ["collect", "reasoning_gym:chain_sum", "--base-url", env_url, "-o", str(out)]
    assert main([*argv, "-n", "3", "--dataset-config", CONFIG]) == 0
    printed = capsys.readouterr().out
    assert "Collected=3 skipped=0 dropped=0 failed=0" in printed
    records = _lines(out / "results.jsonl")
    assert sorted(r["episode_id"] for r in records) == ["ep-000000", "ep-000001", "ep-000002"]  # as they end
    questions = []
    for r in records:
        assert r["done"] is True
        assert r["messages"][0]["role"] == "user"
        assert r["messages"][1]["role"] == "assistant"
        questions.append(r["messages"][0]["content"])
        assert r["tool_trace"][0]["result"]["data"]["metadata"]["expected"]  # the env graded it
    assert len(set(questions)) == 3  # each episode its own question (its reset seed)
    for t in load_trajectories(out):  # the reset options came through: the family and its config
        assert t.turns[0].observation["family"] == "chain_sum"
        prompt = t.turns[0].observation["prompt"]
        assert prompt.count(" + ") + prompt.count(" - ") == 3, prompt  # four terms, as configured
    meta = json.loads((out / "metadata.json").read_text())
    assert (meta["env"], meta["provider"]) == ("reasoning_gym:chain_sum", "scripted")
    assert meta["num_episodes_requested"] == 3

    assert main([*argv, "-n", "5", "--dataset-config", CONFIG]) == 0  # resume (the default)
    assert "Collected=2 skipped=3 dropped=0 failed=0" in capsys.readouterr().out
    assert sorted(r["episode_id"] for r in _lines(out / "results.jsonl")) == [f"ep-{i:06d}" for i in range(5)]
    assert _lines(out / "results.jsonl")[:3] == records  # nothing played twice
    assert json.loads((out / "results.json").read_text())["episodes"] == 5  # eval's figures: all of them

    assert main([*argv, "-n", "1", "--no-resume", "--dataset-config", CONFIG]) == 0
    assert len(_lines(out / "results.jsonl")) == 1
    assert len(list(out.glob("results.*.bak.jsonl"))) == 1  # the old file moved aside, as upstream does

    if UPSTREAM_PY.exists():  # upstream's own record reads each line; its serializer resumes from our file
        check = (
            "import json, sys\nfrom openenv.core.harness.collect import EpisodeRecord, RolloutSerializer\n"
            "for line in open(sys.argv[1] + '/results.jsonl'):\n    EpisodeRecord(**json.loads(line))\n"
            "print(sorted(RolloutSerializer(sys.argv[1]).collected_episode_ids()))"
        )
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        proc = subprocess.run(
            [str(UPSTREAM_PY), "-c", check, str(out)], cwd=tmp_path, env=env, capture_output=True, text=True,
            timeout=120,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert proc.stdout.strip() == "['ep-000000']"


def test_collect_with_an_openai_compatible_teacher(
    env_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
    pytest.importorskip("openai", reason="the eval extra brings the openai SDK")
    from openenv.policy import LocalModel, serve_app

    with serve_in_background(serve_app(LocalModel("tiny", seed=0), model_name="tiny")) as llm:
        argv = ["collect", "reasoning_gym:chain_sum", "--base-url", env_url, "-o", str(tmp_path / "c")]
        code = main(
            [*argv, "-n", "2", "--llm-endpoint", llm.url, "--model", "tiny", "--max-tokens", "4",
             "--system-prompt", "add"]  # the default prompt and the question overrun tiny's 256 tokens
        )  # fmt: skip
    assert code == 0
    printed = capsys.readouterr().out
    assert "Teacher: openai-compatible/tiny" in printed
    assert "Collected=2 skipped=0 dropped=0 failed=0" in printed
    for t in load_trajectories(tmp_path / "c"):
        assert t.policy == "openai:tiny"
        assert 0 < t.completion_tokens <= 4
    meta = json.loads((tmp_path / "c" / "metadata.json").read_text())
    assert meta["llm_endpoint"] == llm.url


def test_the_teacher_takes_upstreams_endpoint_and_system_prompt(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai", reason="the eval extra brings the openai SDK")
    from openenv.eval._collect import CollectConfig, teacher
    from openenv.policy import ActionSpace, Episode

    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("API_KEY", "k")  # upstream's second choice
    cfg = CollectConfig("echo", "http://e", "o", llm_endpoint="http://127.0.0.1", llm_port=8123, model="m",
                        system_prompt="be brief")  # fmt: skip
    policy = teacher(cfg)
    assert policy.base_url == "http://127.0.0.1:8123/v1"  # type: ignore[attr-defined]
    assert policy.client.api_key == "k"  # type: ignore[attr-defined]
    actions = ActionSpace.from_schema({"action": {"properties": {"message": {"type": "string"}}}})
    agent = policy.agent(Episode("echo", "t", {}, 0, 0, actions, 1))
    assert agent.messages[0] == {"role": "system", "content": "be brief"}  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("extra", "says"),
    [
        (["--provider", "nope"], "--provider 'nope' is not one of scripted, openai, anthropic"),
        (["--provider", "openai"], "--model is required"),
        (["--dataset-config", "{"], "--dataset-config must be valid JSON"),
        (["-n", "0"], "--num-episodes must be at least 1"),
        (["-n", "1"], "no env server answers at http://127.0.0.1:9"),  # upstream: a failed episode each
    ],
)
def test_bad_input_is_one_line_and_exit_2(
    extra: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["collect", "reasoning_gym:chain_sum", "--base-url", "http://127.0.0.1:9", "-o", str(tmp_path)]
    assert main([*argv, *extra]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("openenv collect: ")
    assert says in line

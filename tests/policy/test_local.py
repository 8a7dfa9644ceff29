"""Local checkpoints: what `openenv train` writes loads with its trained weights, a
missing one is a one-line error, and `openenv policy serve` answers the openai SDK."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
openai = pytest.importorskip("openai", reason="the eval extra brings the openai SDK")

from openenv._exceptions import PolicyError  # noqa: E402
from openenv.policy import LocalModel  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(300)


def test_a_train_run_folder_loads_with_its_trained_weights(tmp_path: Path) -> None:
    from openenv.train import TrainConfig, load_policy
    from openenv.train._learner import save_checkpoint

    cfg = TrainConfig(env=["http://127.0.0.1:1"], model="tiny", out=str(tmp_path))
    policy = load_policy("tiny", seed=5)  # not the weights a fresh tiny (seed 0) has
    opt = torch.optim.AdamW(policy.model.parameters())
    save_checkpoint(tmp_path, policy, opt, 3, cfg)
    loaded = LocalModel(str(tmp_path), seed=0)
    for (name, saved), (_, got) in zip(
        policy.model.state_dict().items(), loaded.policy.model.state_dict().items(), strict=True
    ):
        assert torch.equal(saved, got), name
    fresh = LocalModel("tiny", seed=0)
    assert not torch.equal(fresh.policy.model.tok.weight, loaded.policy.model.tok.weight)


@pytest.mark.parametrize("where", ["missing", "empty"])
def test_a_folder_without_a_checkpoint_is_a_policy_error(tmp_path: Path, where: str) -> None:
    path = tmp_path / "nothing" if where == "missing" else tmp_path
    with pytest.raises(PolicyError, match="checkpoint"):
        LocalModel(str(path))


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.slow
def test_openenv_policy_serve_answers_the_openai_sdk(tmp_path: Path) -> None:
    port = _free_port()
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "openenv", "policy", "serve", "tiny", "--port", str(port)],
        cwd=ROOT,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="none", max_retries=0)
        deadline = time.monotonic() + 120
        while True:
            try:
                models = client.models.list()
                break
            except openai.APIConnectionError:
                assert proc.poll() is None, (tmp_path / "serve.log").read_text()
                assert time.monotonic() < deadline, "openenv policy serve did not answer in 120 s"
                time.sleep(0.2)
        assert [m.id for m in models.data] == ["tiny"]
        reply = client.chat.completions.create(
            model="tiny",
            messages=[{"role": "user", "content": "1 + 1 ="}],
            max_tokens=5,
            logprobs=True,
            extra_body={"return_token_ids": True},
        )
        ids = reply.choices[0].model_extra["token_ids"]
        assert 1 <= len(ids) <= 5
        assert len(reply.choices[0].logprobs.content) == len(ids)
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        log.close()


def test_policy_serve_without_a_checkpoint_is_one_line_and_exit_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "openenv", "policy", "serve", str(tmp_path / "none")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env=dict(os.environ),
    )
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith("openenv policy: no checkpoint at")


def test_each_token_is_told_as_it_is_sampled_in_a_batch() -> None:
    """``generate(on_token=...)`` (what a stream is sent from) tells each request its own
    tokens and logprobs, the same as it returns, also when requests share a batch."""
    import asyncio

    model = LocalModel("tiny", seed=3)
    told: dict[int, list[tuple[int, float]]] = {0: [], 1: [], 2: []}

    async def three() -> list[tuple[list[int], list[float]]]:
        return list(
            await asyncio.gather(
                *(
                    model.generate(
                        [5, 6, 7 + i],
                        max_new_tokens=6,
                        temperature=1.0,
                        on_token=lambda t, lp, i=i: told[i].append((t, lp)),
                    )
                    for i in range(3)
                )
            )
        )

    outs = asyncio.run(three())
    assert max(model.batch_sizes) > 1  # they shared a sample() call
    for i, (ids, logps) in enumerate(outs):
        assert [t for t, _ in told[i]] == ids
        assert [lp for _, lp in told[i]] == pytest.approx(logps)

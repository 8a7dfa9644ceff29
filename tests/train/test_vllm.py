"""The vLLM sampler path: which sampler is chosen, the missing-vLLM error, and the
conversion of vLLM's output objects (stand-ins for vLLM's types: vLLM does not install
on this CPU-only machine, so the engine itself is not run here)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import pytest

from openenv.cli import main as cli_main
from openenv.train import TrainConfig
from openenv.train._sampler import choose_sampler, vllm_installed
from openenv.train._vllm import from_outputs


@dataclass
class LogprobDouble:
    """Test double of ``vllm.logprobs.Logprob``."""

    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


@dataclass
class CompletionOutputDouble:
    """Test double of ``vllm.outputs.CompletionOutput`` (the fields the sampler reads)."""

    token_ids: list[int]
    logprobs: list[dict[int, LogprobDouble]] | None
    index: int = 0
    text: str = ""


@dataclass
class RequestOutputDouble:
    """Test double of ``vllm.outputs.RequestOutput``."""

    outputs: list[CompletionOutputDouble]
    prompt_token_ids: list[int] = field(default_factory=list)


def test_choose_sampler(tmp_path: Path) -> None:
    folder = str(tmp_path)  # a Hugging Face model folder
    assert choose_sampler("auto", folder, "cuda", vllm=True) == "vllm"
    assert choose_sampler("auto", folder, "cpu", vllm=True) == "hf"
    assert choose_sampler("auto", "tiny", "cuda", vllm=True) == "hf"
    assert choose_sampler("auto", folder, "cuda", vllm=False) == "hf"
    assert choose_sampler("hf", folder, "cuda", vllm=True) == "hf"
    assert choose_sampler("vllm", folder, "cpu", vllm=True) == "vllm"
    with pytest.raises(ValueError, match="needs vLLM, which is not installed"):
        choose_sampler("vllm", folder, "cuda", vllm=False)
    with pytest.raises(ValueError, match="needs a Hugging Face model folder, not 'tiny'"):
        choose_sampler("vllm", "tiny", "cuda", vllm=True)
    with pytest.raises(ValueError, match="sampler must be one of auto, hf, vllm"):
        choose_sampler("sglang", folder, "cuda")
    with pytest.raises(ValueError, match="sampler must be 'auto', 'hf' or 'vllm'"):
        TrainConfig(env=["x"], sampler="sglang")


def test_sampler_vllm_without_vllm_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if vllm_installed():
        pytest.skip("vLLM is installed here: the missing-vLLM error cannot be reached")
    assert choose_sampler("auto", str(tmp_path), "cuda") == "hf"  # auto falls back
    args = ["train", "--env", "http://127.0.0.1:9", "--model", str(tmp_path), "--sampler", "vllm"]
    assert cli_main([*args, "--out", str(tmp_path / "run")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "sampler 'vllm' needs vLLM, which is not installed: pip install vllm" in err


def test_from_outputs_takes_the_sampled_tokens_logprobs() -> None:
    stop = (2,)
    outputs = [
        RequestOutputDouble(  # stopped on the stop token, which is kept
            [
                CompletionOutputDouble(
                    [5, 7, 2],
                    [
                        {5: LogprobDouble(-0.5, 1), 9: LogprobDouble(-1.2, 2)},
                        {7: LogprobDouble(-2.0, 3), 5: LogprobDouble(-0.1, 1)},  # not the top token
                        {2: LogprobDouble(-0.3, 1)},
                    ],
                )
            ]
        ),
        RequestOutputDouble(
            [CompletionOutputDouble([4, 4], [{4: LogprobDouble(-1.0)}, {4: LogprobDouble(-0.25)}])]
        ),
        RequestOutputDouble([CompletionOutputDouble([], [])]),
    ]
    assert from_outputs(outputs, stop) == [([5, 7, 2], [-0.5, -2.0, -0.3]), ([4, 4], [-1.0, -0.25]), ([], [])]
    # tokens after a stop token (a stop the engine did not act on) are cut, like the HF path
    late = [
        RequestOutputDouble(
            [CompletionOutputDouble([2, 6], [{2: LogprobDouble(-0.1)}, {6: LogprobDouble(-0.2)}])]
        )
    ]
    assert from_outputs(late, stop) == [([2], [-0.1])]
    with pytest.raises(ValueError, match="no logprob for some sampled tokens"):
        from_outputs([RequestOutputDouble([CompletionOutputDouble([3], None)])], stop)
    with pytest.raises(ValueError, match="no logprob for some sampled tokens"):
        from_outputs(
            [RequestOutputDouble([CompletionOutputDouble([3, 4], [{3: LogprobDouble(-1.0)}])])], stop
        )

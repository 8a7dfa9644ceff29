"""A vLLM sampler for rollout workers (``TrainConfig.sampler`` ``"auto"`` or ``"vllm"``).

Used for Hugging Face model folders when ``import vllm`` works; the tiny preset and
machines without vLLM use the in-process sampler (``_sampler.py``). The engine samples
from token ids (``TokensPrompt``) and returns, per context, the sampled ids and the
log-probability of each under the *processed* distribution (``logprobs_mode=
"processed_logprobs"``: after temperature), the same shape as ``_sampler.sample``.

Weights arrive as the one ``torch.save`` blob per step that every rollout worker gets;
``collective_rpc`` runs ``OpenEnvWeightLoader.openenv_load_blob`` in each vLLM worker,
which hands the tensors to the model's own ``load_weights``; the prefix cache is reset
after each load (its entries were computed with the old weights).

Untested on this project's CI machine: vLLM does not install there (CPU only). The tests
cover the selection, the missing-vLLM error and ``from_outputs`` on stand-in objects.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from typing import Any

import torch

from ._sampler import NO_VLLM, trim, vllm_installed


def from_outputs(outputs: Sequence[Any], stop_ids: tuple[int, ...]) -> list[tuple[list[int], list[float]]]:
    """vLLM ``RequestOutput`` objects -> ``[(sampled ids, their logprobs)]`` in order.

    Each request has one completion (``n=1``) whose ``logprobs`` holds, per sampled
    token, a mapping from token id to an object with a ``logprob`` attribute.
    """
    ids_rows: list[list[int]] = []
    logp_rows: list[list[float]] = []
    for request in outputs:
        completion = request.outputs[0]
        ids = [int(t) for t in completion.token_ids]
        if completion.logprobs is None or len(completion.logprobs) != len(ids):
            raise ValueError("vLLM returned no logprob for some sampled tokens (logprobs=0 was asked)")
        ids_rows.append(ids)
        logp_rows.append([float(step[t].logprob) for t, step in zip(ids, completion.logprobs, strict=True)])
    return trim(ids_rows, logp_rows, stop_ids)


class OpenEnvWeightLoader:
    """vLLM worker extension (``worker_extension_cls``): loads a weight blob in place."""

    model_runner: Any

    def openenv_load_blob(self, blob: bytes) -> int:
        state = torch.load(io.BytesIO(blob), map_location="cpu", weights_only=True)
        loaded = self.model_runner.model.load_weights(weights=list(state.items()))
        return len(loaded) if loaded is not None else len(state)


class VllmEngine:
    """One vLLM ``LLM`` in the rollout worker's process, on its GPU."""

    def __init__(
        self, model: str, *, seed: int, stop_ids: tuple[int, ...], gpu_memory_utilization: float
    ) -> None:
        if not vllm_installed():
            raise ValueError(NO_VLLM)
        import vllm  # type: ignore[import-not-found, unused-ignore]

        self._params = vllm.SamplingParams
        self.stop_ids = stop_ids
        self.llm = vllm.LLM(
            model=model,
            seed=seed,
            dtype="bfloat16",
            enforce_eager=True,
            gpu_memory_utilization=gpu_memory_utilization,
            logprobs_mode="processed_logprobs",
            worker_extension_cls=f"{__name__}.OpenEnvWeightLoader",
        )

    def sample(
        self,
        contexts: list[list[int]],
        *,
        max_new_tokens: int,
        temperature: float,
        generator: torch.Generator,
    ) -> list[tuple[list[int], list[float]]]:
        seeds = torch.randint(0, 2**31 - 1, (len(contexts),), generator=generator).tolist()
        params = [
            self._params(
                n=1,
                temperature=temperature,
                top_p=1.0,
                top_k=0,
                max_tokens=max_new_tokens,
                logprobs=0,
                stop_token_ids=list(self.stop_ids),
                seed=int(s),
                skip_special_tokens=False,
                detokenize=False,
            )
            for s in seeds
        ]
        prompts = [{"prompt_token_ids": list(c)} for c in contexts]
        outputs = self.llm.generate(prompts, sampling_params=params, use_tqdm=False)
        return from_outputs(outputs, self.stop_ids)

    def load_state(self, blob: bytes) -> None:
        self.llm.collective_rpc("openenv_load_blob", args=(blob,))
        self.llm.reset_prefix_cache()

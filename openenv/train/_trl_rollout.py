"""``TrlRollout``: a TRL ``rollout_func`` over the protocol, for tokenizers without tool calling.

It samples with the trainer's model and steps the env over the protocol (RFC 0002 text
envs), one batch frame per turn. For tokenizers with a tool-calling chat template, see
``trl_environment`` (``_trl_env.py``).

Needs the ``train`` extra (``trl``).
"""

from __future__ import annotations

import itertools
import math
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch

from .._extras import require
from .._models import EnvModels
from ..client import EnvClient
from ..client._batch import Reset
from ._text import TextEnv, text_env


class TrlRollout:
    """A TRL ``rollout_func`` over the protocol, for tokenizers without tool calling.

        rollout = TrlRollout(url, MODELS, max_new_tokens=4)
        trainer = GRPOTrainer(model, reward_funcs=rollout.reward, train_dataset=rollout.dataset(range(32)),
                              rollout_func=rollout, processing_class=tokenizer, args=args)

    ``dataset(seeds)`` resets the env once per seed and makes one row per seed whose
    prompt is the first observation's text (as a user message); ``rollout(prompts,
    trainer)`` maps each prompt back to its seed (RFC 0002: the task is a function of
    the seed), resets one named session per rollout in one batch frame, samples with the
    trainer's model, and steps every live episode in one frame per turn (up to
    ``max_turns``; env replies are appended as tokens with ``env_mask`` 0). ``reward``
    returns each episode's summed reward; an episode whose env call failed gets None
    (TRL leaves it out of its group's baseline). Sessions are closed on every path.
    ``last`` holds the timings of the latest call: ``wall_s``, ``env_s`` (waiting on the
    reset and step frames; closing not counted), ``sample_s`` and ``sampled_tokens``.
    """

    def __init__(
        self,
        base_url: str,
        models: EnvModels[Any, Any, Any],
        *,
        max_turns: int = 1,
        max_new_tokens: int = 16,
        temperature: float = 1.0,
        reset_options: Mapping[str, Any] | None = None,
        observation_adapter: Callable[[Mapping[str, Any]], str] | None = None,
        action_adapter: Callable[[str], dict[str, Any]] | None = None,
        timeout_s: float = 30.0,
        transport: Any = None,
    ) -> None:
        require("trl", extra="train", feature="openenv.train.TrlRollout")
        if max_turns < 1 or max_new_tokens < 1:
            raise ValueError("max_turns and max_new_tokens must be at least 1")
        self.base_url = base_url
        self.models = models
        self.max_turns = max_turns
        self.max_new_tokens = max_new_tokens
        self.temperature = temperature
        self.reset_options = dict(reset_options or {})
        self.timeout_s = timeout_s
        self.transport = transport
        schema = {
            "action": models.action.model_json_schema(),
            "observation": models.observation.model_json_schema(),
        }
        self.text: TextEnv = text_env(
            schema, observation_adapter=observation_adapter, action_adapter=action_adapter
        )
        self.tasks: dict[str, int] = {}
        self._calls = itertools.count()
        self.last: dict[str, float] = {}
        self.__name__ = "TrlRollout"

    def _client(self) -> EnvClient[Any, Any, Any]:
        return EnvClient(self.base_url, self.models, timeout_s=self.timeout_s, transport=self.transport)

    def _text(self, observation: Any) -> str:
        data = observation.model_dump(mode="json") if hasattr(observation, "model_dump") else observation
        return self.text.observation_text(data)

    def dataset(self, seeds: Iterable[int]) -> Any:
        """A ``datasets.Dataset`` with one conversational prompt per seed."""
        datasets = require("datasets", extra="train", feature="TrlRollout.dataset")
        rows = []
        with self._client() as env:
            for seed in seeds:
                text = self._text(env.reset(seed=seed, **self.reset_options).observation)
                self.tasks.setdefault(text, seed)
                rows.append({"prompt": [{"role": "user", "content": text}], "seed": seed})
        return datasets.Dataset.from_list(rows)

    def reward(self, completions: list[Any], env_reward: list[float | None], **_: Any) -> list[float | None]:
        """The reward function to pass to ``GRPOTrainer``: the env's episode returns."""
        return list(env_reward)

    def _encode(self, tokenizer: Any, prompt: Any) -> list[int]:
        if isinstance(prompt, str):
            return list(tokenizer(prompt, add_special_tokens=False)["input_ids"])
        ids = tokenizer.apply_chat_template(
            prompt, add_generation_prompt=True, tokenize=True, return_dict=True
        )
        return list(ids["input_ids"])

    def _seed(self, prompt: Any) -> int:
        text = prompt if isinstance(prompt, str) else prompt[-1]["content"]
        if text not in self.tasks:
            raise KeyError(f"prompt {text[:60]!r} is not from TrlRollout.dataset(); its seed is unknown")
        return self.tasks[text]

    def __call__(self, prompts: list[Any], trainer: Any) -> dict[str, list[Any]]:
        """One generation batch: reset, then sample and step every live episode per turn."""
        t_start = time.perf_counter()
        call = next(self._calls)
        sampler = self._sampler(trainer, call)
        batch = _Batch.start(
            [f"trl-{call}-{i}" for i in range(len(prompts))],
            [self._encode(sampler.tokenizer, p) for p in prompts],
        )
        with self._client() as env:
            try:
                self._reset_all(env, batch, prompts)
                for turn in range(self.max_turns):
                    if not batch.live:
                        break
                    actions = self._sample_turn(sampler, batch)
                    self._step_turn(env, batch, actions, sampler.tokenizer, last=turn == self.max_turns - 1)
            finally:
                env.close_batch(batch.names, return_exceptions=True)
        return self._finish(batch, sampler.stop_ids[0], time.perf_counter() - t_start)

    def _sampler(self, trainer: Any, call: int) -> _Sampler:
        """The trainer's model and tokenizer, and this call's own generator."""
        from ._hf import hf_generate

        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        return _Sampler(
            model=model,
            tokenizer=tokenizer,
            device=next(model.parameters()).device,
            generator=torch.Generator().manual_seed(int(trainer.args.seed) * 1_000_003 + call),
            stop_ids=(int(tokenizer.eos_token_id),),
            pad_id=int(tokenizer.pad_token_id),
            hf_generate=hf_generate,
        )

    def _reset_all(self, env: EnvClient[Any, Any, Any], batch: _Batch, prompts: list[Any]) -> None:
        """One named session per prompt, reset with the prompt's seed in one frame; an
        episode whose reset failed is over (return None)."""
        items = [
            Reset(name, seed=self._seed(p), options=self.reset_options)
            for name, p in zip(batch.names, prompts, strict=True)
        ]
        t0 = time.perf_counter()
        outs = env.batch(items, return_exceptions=True)
        batch.env_s += time.perf_counter() - t0
        for i, out in enumerate(outs):
            if isinstance(out, BaseException):
                batch.returns[i] = None
        batch.live = [i for i in batch.live if batch.returns[i] is not None]

    def _sample_turn(self, sampler: _Sampler, batch: _Batch) -> dict[str, Any]:
        """Sample every live episode's next answer (mask 1); its action, by session."""
        t0 = time.perf_counter()
        contexts = [batch.prompt_ids[i] + batch.completion[i] for i in batch.live]
        new, new_logps = self._sample(sampler, contexts)
        batch.sample_s += time.perf_counter() - t0
        actions = {}
        for i, ids, lps in zip(batch.live, new, new_logps, strict=True):
            batch.append(i, ids, lps, sampled=True)
            text = sampler.tokenizer.decode(ids, skip_special_tokens=True)
            actions[batch.names[i]] = self.models.action.model_validate(self.text.make_action(text))
        return actions

    def _step_turn(
        self,
        env: EnvClient[Any, Any, Any],
        batch: _Batch,
        actions: dict[str, Any],
        tokenizer: Any,
        *,
        last: bool,
    ) -> None:
        """Step every live episode in one frame; add rewards; append each reply that
        continues an episode (mask 0). Episodes done, failed (return None) or on their
        last turn leave ``live``."""
        t0 = time.perf_counter()
        results = env.step_batch(actions, return_exceptions=True)
        batch.env_s += time.perf_counter() - t0
        still = []
        for i, result in zip(batch.live, results, strict=True):
            if isinstance(result, BaseException):
                batch.returns[i] = None
                continue
            batch.returns[i] = (batch.returns[i] or 0.0) + float(result.reward or 0.0)
            if result.done or last:
                continue
            reply = self._text(result.observation)
            if reply:
                ids = self._encode(tokenizer, [{"role": "user", "content": reply}])
                batch.append(i, ids, [0.0] * len(ids), sampled=False)
            still.append(i)
        batch.live = still

    def _finish(self, batch: _Batch, pad_token: int, wall_s: float) -> dict[str, list[Any]]:
        """What TRL takes back, and the call's timings in ``last``."""
        for i, ids in enumerate(batch.completion):
            if not ids:  # failed at reset: one pad token so TRL's tensors line up
                batch.completion[i], batch.logprobs[i], batch.env_mask[i] = [pad_token], [0.0], [0]
        rewards = [None if r is None or math.isnan(r) else r for r in batch.returns]
        self.last = {
            "wall_s": wall_s,
            "env_s": batch.env_s,
            "sample_s": batch.sample_s,
            "sampled_tokens": float(sum(sum(m) for m in batch.env_mask)),
        }
        return {
            "prompt_ids": batch.prompt_ids,
            "completion_ids": batch.completion,
            "logprobs": batch.logprobs,
            "env_mask": batch.env_mask,
            "env_reward": rewards,
        }

    @torch.no_grad()
    def _sample(
        self, sampler: _Sampler, contexts: list[list[int]]
    ) -> tuple[list[list[int]], list[list[float]]]:
        model, pad_id, stop_ids, device = sampler.model, sampler.pad_id, sampler.stop_ids, sampler.device
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad_id] * (width - len(c)) + c for c in contexts], device=device)
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
        was_training = model.training
        model.eval()
        try:
            new, logps = sampler.hf_generate(
                model,
                ids,
                mask,
                pad_id=pad_id,
                stop_ids=stop_ids,
                max_new_tokens=self.max_new_tokens,
                temperature=self.temperature,
                generator=sampler.generator,
            )
        finally:
            model.train(was_training)
        out_ids, out_logps = [], []
        for row, row_lp in zip(new.tolist(), logps.tolist(), strict=True):
            end = next((j + 1 for j, t in enumerate(row) if t in stop_ids), len(row))
            out_ids.append(row[:end])
            out_logps.append(row_lp[:end])
        return out_ids, out_logps


@dataclass(frozen=True, slots=True)
class _Sampler:
    """What sampling needs from the trainer, for one ``rollout_func`` call."""

    model: Any
    tokenizer: Any
    device: torch.device
    generator: torch.Generator
    stop_ids: tuple[int, ...]
    pad_id: int
    hf_generate: Callable[..., tuple[torch.Tensor, torch.Tensor]]


@dataclass(slots=True)
class _Batch:
    """The episodes of one ``rollout_func`` call, by index: tokens so far, returns
    (None: an env call failed), the live ones, and the time spent."""

    names: list[str]
    prompt_ids: list[list[int]]
    completion: list[list[int]]
    logprobs: list[list[float]]
    env_mask: list[list[int]]
    returns: list[float | None]
    live: list[int]
    env_s: float = 0.0
    sample_s: float = 0.0

    @classmethod
    def start(cls, names: list[str], prompt_ids: list[list[int]]) -> _Batch:
        n = len(names)
        return cls(
            names,
            prompt_ids,
            [[] for _ in range(n)],
            [[] for _ in range(n)],
            [[] for _ in range(n)],
            [0.0] * n,
            list(range(n)),
        )

    def append(self, i: int, ids: list[int], logprobs: list[float], *, sampled: bool) -> None:
        """Tokens onto episode ``i``'s completion: sampled (mask 1) or the env's (mask 0)."""
        self.completion[i] += ids
        self.logprobs[i] += logprobs
        self.env_mask[i] += [1 if sampled else 0] * len(ids)

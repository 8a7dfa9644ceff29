"""``TrainConfig``: every setting of a training run, one dataclass.

Choices are functions (``advantage``, ``loss``), not mode strings; a config file or the
command line names them (``"grpo"``, ``"dr_grpo"``, ``"rloo"``; ``"token"``, ``"gspo"``)
and ``TrainConfig.from_dict`` looks the names up once, at the boundary.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from ._algos import ADVANTAGES, LOSSES, AdvantageFn, PolicyLoss, clipped_token_loss, grpo_advantages

CPU_MICRO_BATCH = 64
"""``micro_batch``'s default on CPU: episodes per forward/backward pass."""


@dataclass
class TrainConfig:
    """A GRPO run. Defaults suit the ``tiny`` preset on CPU."""

    env: list[str]
    model: str = "tiny"
    steps: int = 100
    group_size: int = 8
    prompts_per_step: int = 8
    max_turns: int = 1
    workers: int = 0
    """Rollout worker processes on Monarch; 0 runs rollouts in the trainer's process."""
    env_replicas: int = 0
    """With N > 0, ``env`` names one env as ``openenv serve`` takes it (a folder, a name)
    and the run starts N replicas of it on its Monarch host; each group goes to the
    least-loaded live replica, a lost one is replaced and its episodes count as failed."""
    device: str = "cpu"
    out: str = "runs/train"
    seed: int = 0
    lr: float = 1e-3
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    advantage: AdvantageFn = grpo_advantages
    loss: PolicyLoss = clipped_token_loss
    eps_low: float = 0.2
    eps_high: float = 0.28
    kl_beta: float = 0.0
    """Weight of the k3 KL to a frozen copy of the initial policy; 0 loads no copy."""
    temperature: float = 1.0
    max_new_tokens: int = 16
    max_tokens: int = 256
    max_sessions: int = 256
    """Sessions open at once on one env connection (the rest wait for the next wave)."""
    env_timeout_s: float = 30.0
    episode_timeout_s: float = 300.0
    micro_batch: int | Literal["auto"] | None = None
    """Episodes per forward/backward pass; ``"auto"``: the whole step in one pass, halved
    after each out-of-memory error until it fits (the size kept for later steps);
    ``None`` (the default): ``"auto"`` on CUDA, 64 on CPU (where nothing signals out of
    memory)."""
    logprob_chunk: int = 1024
    max_staleness: int = 0
    """Rollouts run up to this many steps ahead of training (0: each step waits for its
    own); episodes sampled more than this many policy versions ago are dropped."""
    observation_adapter: Callable[[Mapping[str, Any]], str] | None = None
    """For envs that are not text envs (RFC 0002): observation dict -> prompt text."""
    action_adapter: Callable[[str], dict[str, Any]] | None = None
    """For envs that are not text envs: generated text -> action dict."""
    sampler: str = "auto"
    """Rollout sampler: ``"hf"`` (in-process), ``"vllm"``, or ``"auto"`` (vLLM when it is
    installed, the model is a Hugging Face folder and the device is CUDA; else ``"hf"``)."""
    tensorboard: bool = True
    """Also write the metrics as TensorBoard events to ``DIR/tb/`` (when installed)."""
    checkpoint_every: int = 10
    task_seed_base: int = 0
    resume: bool = False
    progress: bool = True
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def micro_batch_mode(self) -> int | Literal["auto"]:
        """``micro_batch`` with its default resolved for ``device``."""
        if self.micro_batch is None:
            return "auto" if self.device == "cuda" else CPU_MICRO_BATCH
        return self.micro_batch

    def __post_init__(self) -> None:
        if not self.env:
            raise ValueError("at least one --env URL is needed")
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', not {self.device!r}")
        for name in ("steps", "group_size", "prompts_per_step", "max_turns", "max_new_tokens"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1")
        mb = self.micro_batch
        if mb is not None and mb != "auto" and (isinstance(mb, bool) or not isinstance(mb, int) or mb < 1):
            raise ValueError(f"micro_batch must be 'auto' or an integer of at least 1, not {mb!r}")
        if self.group_size < 2:
            raise ValueError("group_size must be at least 2 (advantages compare episodes of a group)")
        if self.sampler not in ("auto", "hf", "vllm"):
            raise ValueError(f"sampler must be 'auto', 'hf' or 'vllm', not {self.sampler!r}")
        if self.workers < 0:
            raise ValueError("workers must be 0 (in-process) or more")
        if self.max_staleness < 0:
            raise ValueError("max_staleness must be 0 (on-policy) or more")
        if self.env_replicas < 0:
            raise ValueError("env_replicas must be 0 (use the --env URLs) or more")
        if self.env_replicas and len(self.env) != 1:
            raise ValueError("with env_replicas, give one --env: the env to serve (a folder or name)")

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TrainConfig:
        """Build from plain values; ``advantage`` and ``loss`` may be names."""
        data = dict(data)
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown config keys: {', '.join(unknown)}")
        if isinstance(data.get("env"), str):
            data["env"] = [data["env"]]
        data["advantage"] = _lookup(ADVANTAGES, data.get("advantage", grpo_advantages), "advantage")
        data["loss"] = _lookup(LOSSES, data.get("loss", clipped_token_loss), "loss")
        for key in ("observation_adapter", "action_adapter"):
            if isinstance(data.get(key), str):
                data[key] = _import(data[key])
        return cls(**data)

    @classmethod
    def from_file(cls, path: str | Path, **overrides: Any) -> TrainConfig:
        """A ``.toml`` or ``.json`` file; ``overrides`` (not ``None``) win."""
        p = Path(path)
        text = p.read_text(encoding="utf-8")
        data = tomllib.loads(text) if p.suffix == ".toml" else json.loads(text)
        data.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """Plain values (functions by name), as written to ``DIR/config.json``."""
        out = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        out["advantage"] = _name(ADVANTAGES, self.advantage)
        out["loss"] = _name(LOSSES, self.loss)
        for key in ("observation_adapter", "action_adapter"):
            fn = out[key]
            out[key] = None if fn is None else f"{fn.__module__}:{fn.__qualname__}"
        return out


def _lookup(table: dict[str, Any], value: Any, what: str) -> Any:
    if not isinstance(value, str):
        return value
    if value not in table:
        raise ValueError(f"unknown {what} {value!r}; one of {', '.join(sorted(table))}")
    return table[value]


def _import(target: str) -> Any:
    """``"module:function"`` -> the function."""
    module, _, name = target.partition(":")
    if not module or not name:
        raise ValueError(f"an adapter is named 'module:function', not {target!r}")
    obj: Any = importlib.import_module(module)
    for part in name.split("."):
        obj = getattr(obj, part)
    return obj


def _name(table: dict[str, Any], fn: Any) -> str:
    for name, f in table.items():
        if f is fn:
            return name
    return f"{fn.__module__}:{fn.__qualname__}"

"""TRL bridges: any env as a TRL ``environment_factory`` class, and a ``rollout_func``.

``trl_environment(url, MODELS)`` returns a class for ``GRPOTrainer(environment_factory=...)``:
its tools are the env's actions, derived from the action model exactly as the MCP bridge
derives its tools (``openenv.mcp._tools.ActionTools``); each instance drives one episode
through ``EnvClient``. ``TrlRollout`` is for tokenizers without a tool-calling chat
template: a ``rollout_func`` that samples with the trainer's model and steps the env over
the protocol (RFC 0002 text envs), one batch frame per turn.

Needs the ``train`` extra (``trl``) and the ``mcp`` extra (the tool derivation).
"""

from __future__ import annotations

import inspect
import itertools
import math
import time
import weakref
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import torch

from .._exceptions import OpenEnvError
from .._extras import require
from .._models import EnvModels
from ..client import EnvClient
from ..client._batch import Reset
from ._text import TextEnv, observation_text, text_env

_JSON_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "array": list,
    "object": dict,
}
#: Method names TRL gives a meaning of its own; an action tool may not take them.
_RESERVED = ("reset", "get_reward")


def _hint(prop: Mapping[str, Any]) -> Any:
    """A Python type for one JSON Schema property (what TRL's tool schema is built from)."""
    options = [p for p in prop.get("anyOf", []) if isinstance(p, Mapping)]
    if options:
        kinds = [_JSON_TYPES.get(str(p.get("type")), str) for p in options if p.get("type") != "null"]
        hint: Any = kinds[0] if len(kinds) == 1 else str
        return hint | None if len(kinds) < len(options) else hint
    if "$ref" in prop or "properties" in prop:
        return dict
    return _JSON_TYPES.get(str(prop.get("type")), str)


def _tool_method(name: str, description: str, schema: Mapping[str, Any]) -> Callable[..., str]:
    """A method ``name(self, **arguments) -> str`` with a signature and a Google-style
    docstring that ``transformers.utils.get_json_schema`` turns back into ``schema``."""
    props: Mapping[str, Any] = schema.get("properties", {})
    required = set(schema.get("required", []))

    def tool(self: Any, **arguments: Any) -> str:
        return str(self._call_tool(name, arguments))

    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {}
    lines = []
    for arg in sorted(props, key=lambda k: k not in required):
        prop = props[arg]
        annotations[arg] = _hint(prop)
        default = inspect.Parameter.empty if arg in required else None
        params.append(inspect.Parameter(arg, inspect.Parameter.KEYWORD_ONLY, default=default))
        text = str(prop.get("description") or prop.get("title") or arg).replace("\n", " ")
        lines.append(f"    {arg}: {text}")
    annotations["return"] = str
    tool.__name__ = tool.__qualname__ = name
    tool.__annotations__ = annotations
    tool.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [p.replace(annotation=annotations.get(p.name, p.annotation)) for p in params], return_annotation=str
    )
    args = "\n\nArgs:\n" + "\n".join(lines) if lines else ""
    tool.__doc__ = (
        f"{description}{args}\n\nReturns:\n    The env's observation, reward and done flag as JSON."
    )
    return tool


def _action_tools(models: EnvModels[Any, Any, Any]) -> Any:
    require("mcp_types", extra="mcp", feature="openenv.train TRL tools")
    from ..mcp._tools import ActionTools

    if not (isinstance(models.action, type) or hasattr(models.action, "__origin__")):
        raise TypeError("trl_environment needs the env's typed models (its EnvModels), not the generic ones")
    return ActionTools(models.action, default_name="step")


def _render(result: Any, observation_result: Callable[..., Any]) -> str:
    extra = {"reward": result.reward, "done": result.done}
    text: str = observation_result(result.observation, extra).content[0].text
    return text


def trl_environment(
    base_url: str,
    models: EnvModels[Any, Any, Any],
    *,
    reset_options: Mapping[str, Any] | None = None,
    option_columns: Iterable[str] = (),
    timeout_s: float = 30.0,
    transport: Any = None,
    name: str | None = None,
) -> type:
    """A TRL ``environment_factory`` class for the env served at ``base_url``.

    Each instance holds one connection. TRL calls ``reset(**row)`` with the dataset row:
    the row's ``seed`` and its ``option_columns`` (over ``reset_options``) reach the
    env's reset, and the first observation's text (RFC 0002 ``prompt``/``messages``, else
    its JSON) is returned for TRL to append to the prompt. One method per action tool
    steps the env and returns the observation as JSON (the MCP bridge's rendering, plus
    ``reward`` and ``done``); ``get_reward()`` is the episode's return so far.
    ``cls.close_all()`` closes every instance's connection (TRL keeps its pool open).
    """
    from ..mcp._tools import observation_result

    tools = _action_tools(models)
    for spec in tools.specs.values():
        if spec.name in _RESERVED or spec.name.startswith("_"):
            raise TypeError(f"action tool name {spec.name!r} clashes with TRL's environment methods")
    defaults = dict(reset_options or {})
    columns = tuple(option_columns)
    instances: weakref.WeakSet[Any] = weakref.WeakSet()

    def __init__(self: Any) -> None:
        self._client = EnvClient(base_url, models, timeout_s=timeout_s, transport=transport)
        self._return = 0.0
        self._done = False
        instances.add(self)

    def reset(self: Any, **row: Any) -> str | None:
        options = {**defaults, **{k: row[k] for k in columns if k in row}}
        seed = row.get("seed")
        result = self._client.reset(seed=None if seed is None else int(seed), **options)
        self._return, self._done = 0.0, False
        obs = result.observation
        data = obs.model_dump(mode="json") if hasattr(obs, "model_dump") else dict(obs)
        try:
            text = observation_text(data)
        except OpenEnvError:
            text = _render(result, observation_result)
        return text or None

    def _call_tool(self: Any, tool: str, arguments: dict[str, Any]) -> str:
        if self._done:
            raise RuntimeError("the episode is over; no more actions")
        action = tools.build(tool, {k: v for k, v in arguments.items() if v is not None})
        result = self._client.step(action)
        self._return += float(result.reward or 0.0)
        self._done = result.done
        return _render(result, observation_result)

    def get_reward(self: Any) -> float:
        return float(self._return)

    def close(self: Any) -> None:
        self._client.close()

    def close_all(cls: Any) -> None:
        for instance in list(instances):
            instance._client.close()

    body: dict[str, Any] = {
        "__init__": __init__,
        "__del__": lambda self: self._client.close(),
        "reset": reset,
        "get_reward": get_reward,
        "_call_tool": _call_tool,
        "_close": close,
        "close_all": classmethod(close_all),  # a bound method on the class: TRL does not list it as a tool
        "__doc__": f"TRL environment for the env at {base_url} (tools: {', '.join(tools.specs)}).",
    }
    for spec in tools.specs.values():
        body[spec.name] = _tool_method(spec.name, spec.description, spec.input_schema)
    cls_name = name or f"{getattr(models.action, '__name__', 'Env').removesuffix('Action')}TrlEnv"
    return type(cls_name, (), body)


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
        from ._hf import hf_generate

        tokenizer = trainer.processing_class
        model = trainer.accelerator.unwrap_model(trainer.model)
        device = next(model.parameters()).device
        call = next(self._calls)
        generator = torch.Generator().manual_seed(int(trainer.args.seed) * 1_000_003 + call)
        stop_ids = (int(tokenizer.eos_token_id),)
        pad_id = int(tokenizer.pad_token_id)
        n = len(prompts)
        names = [f"trl-{call}-{i}" for i in range(n)]
        prompt_ids = [self._encode(tokenizer, p) for p in prompts]
        completion: list[list[int]] = [[] for _ in range(n)]
        logprobs: list[list[float]] = [[] for _ in range(n)]
        env_mask: list[list[int]] = [[] for _ in range(n)]
        returns: list[float | None] = [0.0] * n
        live = list(range(n))
        t_start = time.perf_counter()
        env_s = sample_s = 0.0
        with self._client() as env:
            try:
                items = [
                    Reset(names[i], seed=self._seed(p), options=self.reset_options)
                    for i, p in enumerate(prompts)
                ]
                t0 = time.perf_counter()
                outs = env.batch(items, return_exceptions=True)
                env_s += time.perf_counter() - t0
                for i, out in enumerate(outs):
                    if isinstance(out, BaseException):
                        returns[i] = None
                live = [i for i in live if returns[i] is not None]
                for turn in range(self.max_turns):
                    if not live:
                        break
                    t0 = time.perf_counter()
                    new, new_logps = self._sample(
                        model,
                        hf_generate,
                        [prompt_ids[i] + completion[i] for i in live],
                        device,
                        pad_id,
                        stop_ids,
                        generator,
                    )
                    sample_s += time.perf_counter() - t0
                    actions = {}
                    for i, ids, lps in zip(live, new, new_logps, strict=True):
                        completion[i] += ids
                        logprobs[i] += lps
                        env_mask[i] += [1] * len(ids)
                        text = tokenizer.decode(ids, skip_special_tokens=True)
                        actions[names[i]] = self.models.action.model_validate(self.text.make_action(text))
                    t0 = time.perf_counter()
                    results = env.step_batch(actions, return_exceptions=True)
                    env_s += time.perf_counter() - t0
                    still = []
                    for i, result in zip(live, results, strict=True):
                        if isinstance(result, BaseException):
                            returns[i] = None
                            continue
                        returns[i] = (returns[i] or 0.0) + float(result.reward or 0.0)
                        if result.done or turn == self.max_turns - 1:
                            continue
                        reply = self._text(result.observation)
                        if reply:
                            ids = self._encode(tokenizer, [{"role": "user", "content": reply}])
                            completion[i] += ids
                            logprobs[i] += [0.0] * len(ids)
                            env_mask[i] += [0] * len(ids)
                        still.append(i)
                    live = still
            finally:
                env.close_batch(names, return_exceptions=True)
        for i in range(n):
            if not completion[i]:  # failed at reset: one pad token so TRL's tensors line up
                completion[i], logprobs[i], env_mask[i] = [stop_ids[0]], [0.0], [0]
        rewards = [None if r is None or math.isnan(r) else r for r in returns]
        self.last = {
            "wall_s": time.perf_counter() - t_start,
            "env_s": env_s,
            "sample_s": sample_s,
            "sampled_tokens": float(sum(sum(m) for m in env_mask)),
        }
        return {
            "prompt_ids": prompt_ids,
            "completion_ids": completion,
            "logprobs": logprobs,
            "env_mask": env_mask,
            "env_reward": rewards,
        }

    @torch.no_grad()
    def _sample(
        self,
        model: Any,
        hf_generate: Callable[..., tuple[torch.Tensor, torch.Tensor]],
        contexts: list[list[int]],
        device: torch.device,
        pad_id: int,
        stop_ids: tuple[int, ...],
        generator: torch.Generator,
    ) -> tuple[list[list[int]], list[list[float]]]:
        width = max(len(c) for c in contexts)
        ids = torch.tensor([[pad_id] * (width - len(c)) + c for c in contexts], device=device)
        mask = torch.tensor([[0] * (width - len(c)) + [1] * len(c) for c in contexts], device=device)
        was_training = model.training
        model.eval()
        try:
            new, logps = hf_generate(
                model,
                ids,
                mask,
                pad_id=pad_id,
                stop_ids=stop_ids,
                max_new_tokens=self.max_new_tokens,
                temperature=self.temperature,
                generator=generator,
            )
        finally:
            model.train(was_training)
        out_ids, out_logps = [], []
        for row, row_lp in zip(new.tolist(), logps.tolist(), strict=True):
            end = next((j + 1 for j, t in enumerate(row) if t in stop_ids), len(row))
            out_ids.append(row[:end])
            out_logps.append(row_lp[:end])
        return out_ids, out_logps

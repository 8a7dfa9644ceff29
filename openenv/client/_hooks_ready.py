"""Two ready-made ``HookEnvClient``s: dicts both ways, and hooks written from ``EnvModels``.

``DictEnvClient`` (upstream's ``GenericEnvClient``) serves any env server: observations
and states come back as plain dicts; actions go as dicts (or models, dumped). Our own
untyped client is ``openenv.EnvClient(url)`` with ``GENERIC_MODELS``.

``ModelsEnvClient``: our envs ship models, not a ``client.py`` (one generic client
serves them all). Where upstream code expects an env client class (``AutoEnv``,
``from_docker_image``), ``models_client(echo_env.MODELS, "EchoEnv")`` makes one.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from .._models import EnvModels
from ._hooks import HookEnvClient
from ._hooks_result import HookStepResult as StepResult

__all__ = ["DictAction", "DictEnvClient", "ModelsEnvClient", "models_client"]


class DictEnvClient(HookEnvClient[dict[str, Any], dict[str, Any], dict[str, Any]]):
    """A hook-based client that needs no env package: dicts both ways.

    >>> with DictEnvClient(base_url="http://127.0.0.1:8000") as env:  # doctest: +SKIP
    ...     result = env.step({"message": "hi"})
    """

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, dict):
            return action
        if isinstance(action, BaseModel):
            return action.model_dump()
        if hasattr(action, "__dict__"):
            return dict(vars(action))
        return dict(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[dict[str, Any]]:
        return StepResult(
            observation=payload.get("observation", {}),
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata"),
            truncated=bool(payload.get("truncated", False)),
        )

    def _parse_state(self, payload: dict[str, Any]) -> dict[str, Any]:
        return payload


class DictAction(dict[str, Any]):
    """A dict built from keyword arguments: ``DictAction(message="hi")``."""

    def __init__(self, **fields: Any) -> None:
        super().__init__(fields)

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.items())
        return f"{type(self).__name__}({inner})"


class ModelsEnvClient(HookEnvClient[Any, Any, Any]):
    """Hooks from ``models``: dump the action model, validate the observation and state."""

    models: ClassVar[EnvModels[Any, Any, Any]]

    def _step_payload(self, action: Any) -> dict[str, Any]:
        if isinstance(action, BaseModel):
            return action.model_dump(mode="json", exclude_unset=True)
        return dict(action)

    def _parse_result(self, payload: dict[str, Any]) -> StepResult[Any]:
        body = dict(payload.get("observation") or {})
        model = self.models.observation
        if isinstance(model, type) and issubclass(model, BaseModel):
            signals = {"reward": payload.get("reward"), "done": bool(payload.get("done", False))}
            signals["truncated"] = bool(payload.get("truncated", False))
            body.update({k: v for k, v in signals.items() if k in model.model_fields})
            if "metadata" in payload and "metadata" in model.model_fields:
                body["metadata"] = payload["metadata"]
            observation: Any = model.model_validate(body)
        else:
            observation = body
        return StepResult(
            observation,
            reward=payload.get("reward"),
            done=bool(payload.get("done", False)),
            metadata=payload.get("metadata"),
            truncated=bool(payload.get("truncated", False)),
        )

    def _parse_state(self, payload: dict[str, Any]) -> Any:
        model = self.models.state
        if isinstance(model, type) and issubclass(model, BaseModel):
            return model.model_validate(payload)
        return payload


def models_client(models: EnvModels[Any, Any, Any], name: str = "ModelsEnvClient") -> type[ModelsEnvClient]:
    """A ``ModelsEnvClient`` subclass called ``name`` for ``models``."""
    return type(name, (ModelsEnvClient,), {"models": models, "__module__": __name__})

"""An upstream-style client for an env of ours: the hooks written once, from its ``EnvModels``.

Our envs ship models, not a ``client.py`` (one generic client serves them all). Where
upstream code expects an env client class (``AutoEnv``, ``from_docker_image``), this
makes one: ``models_client(echo_env.MODELS, "EchoEnv")``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from pydantic import BaseModel

from .._models import EnvModels
from .client_types import StepResult
from .env_client import EnvClient

__all__ = ["ModelsEnvClient", "models_client"]


class ModelsEnvClient(EnvClient[Any, Any, Any]):
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

"""``GetEndpointConfig``: a GET route described as data, registered on an app.

Works with the app ``create_app`` returns (ours) and with a FastAPI app.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["GetEndpointConfig", "register_get_endpoints"]


@dataclass
class GetEndpointConfig:
    path: str
    handler: Callable[[], Any]
    response_model: Any
    tag: str
    summary: str
    description: str


def register_get_endpoints(app: Any, configs: Sequence[GetEndpointConfig]) -> None:
    """Register each config's handler as ``GET path`` on ``app``."""
    for config in configs:
        app.get(
            config.path,
            response_model=config.response_model,
            tags=[config.tag],
            summary=config.summary,
            description=config.description,
        )(_endpoint(config.handler))


def _endpoint(handler: Callable[[], Any]) -> Callable[[], Any]:
    async def endpoint() -> Any:
        return handler()

    return endpoint

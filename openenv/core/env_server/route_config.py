"""``GetEndpointConfig``: a GET route described as data, registered on an app (ours or
FastAPI) by ``register_get_endpoints`` (``openenv.server._fastapi_style``)."""

from ...server._fastapi_style import GetEndpointConfig, register_get_endpoints

__all__ = ["GetEndpointConfig", "register_get_endpoints"]

"""An upstream-style client class for an env of ours, from its ``EnvModels``."""

from ..client._hooks_ready import ModelsEnvClient, models_client

__all__ = ["ModelsEnvClient", "models_client"]

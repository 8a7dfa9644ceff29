from .client import ToolsEnv

__all__ = ["ToolsEnv"]

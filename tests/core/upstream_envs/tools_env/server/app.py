from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.mcp_types import CallToolAction, CallToolObservation

from .tools_environment import ToolsEnvironment

app = create_app(ToolsEnvironment, CallToolAction, CallToolObservation, env_name="tools_env")

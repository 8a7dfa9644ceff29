"""The counter env served by uvicorn, as tests/core serves it (one fixture for both)."""

from tests.core.test_upstream_envs import uvicorn_counter  # noqa: F401 (a fixture)

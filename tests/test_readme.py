"""The README's code runs: its example env is served and driven."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from starlette.testclient import TestClient

from openenv.server import create_app

README = (Path(__file__).parents[1] / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.DOTALL)


def test_readme_starts_with_the_two_commands() -> None:
    first = _blocks("bash")[0].strip().splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert README.index("```bash") < README.index("##")


def test_readme_env_example_runs_over_the_websocket() -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_blocks("python")[0], "README.md", "exec"), namespace)
    env_class = namespace["GuessEnv"]
    with TestClient(create_app(env_class)) as http, http.websocket_connect("/ws") as ws:
        ws.send_json({"type": "reset", "data": {"seed": 3}})
        assert ws.receive_json()["data"]["observation"]["hint"] == "guess 0-9"
        ws.send_json({"type": "step", "data": {"guess": 1}})
        assert ws.receive_json()["data"]["observation"]["hint"] == "higher"
        ws.send_json({"type": "step", "data": {"guess": 3}})
        reply = ws.receive_json()["data"]
        assert (reply["reward"], reply["done"]) == (1.0, True)

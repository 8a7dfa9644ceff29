"""The README's code runs: its example env is served and driven."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from openenv import EnvClient, EnvModels

README = (Path(__file__).parents[1] / "README.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", README, re.DOTALL)


def test_readme_starts_with_the_two_commands() -> None:
    first = _blocks("bash")[0].strip().splitlines()
    assert [line.split("#")[0].strip() for line in first] == ["bash scripts/demo.sh", "bash scripts/test.sh"]
    assert README.index("```bash") < README.index("##")


def test_readme_env_example_runs_over_the_websocket(serve) -> None:
    namespace: dict[str, Any] = {}
    exec(compile(_blocks("python")[0], "README.md", "exec"), namespace)
    env_class = namespace["GuessEnv"]
    server = serve(env_class)
    models = EnvModels(namespace["GuessAction"], namespace["GuessObservation"], namespace["State"])
    with EnvClient(server.url, models) as env:
        assert env.reset(seed=3).observation.hint == "guess 0-9"
        assert env.step(namespace["GuessAction"](guess=1)).observation.hint == "higher"
        result = env.step(namespace["GuessAction"](guess=3))
        assert (result.reward, result.terminated, result.truncated) == (1.0, True, False)

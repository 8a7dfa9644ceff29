"""The README's image table says which user each env image runs as, as its Dockerfile
does (issue 20: the coding image runs as root while the README said uid 1000)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _table() -> dict[str, str]:
    readme = (ROOT / "docs" / "tour.md").read_text()  # the README's tour of the images
    rows = re.findall(r"^\| `(\w+_env)` \| `openenv-[\w-]+` \| ([^|]+?) \|", readme, re.MULTILINE)
    return {env: user.strip().strip("*") for env, user in rows}


def _dockerfile_user(env: str) -> str:
    users = re.findall(r"^USER\s+(\S+)", (ROOT / "envs" / env / "Dockerfile").read_text(), re.MULTILINE)
    last = users[-1] if users else "1000:1000"  # the base image's own USER
    return "root" if last.split(":")[0] in ("root", "0") else f"uid {last.split(':')[0]}"


def test_every_env_with_a_dockerfile_has_a_row() -> None:
    envs = {p.parent.name for p in (ROOT / "envs").glob("*/Dockerfile")}
    assert set(_table()) == envs


def test_each_row_states_the_user_its_dockerfile_runs_as() -> None:
    for env, user in _table().items():
        assert user == _dockerfile_user(env), env

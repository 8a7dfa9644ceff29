"""Upstream's server-side ``run_rollout`` tool: a served ``HarborEnvironment`` answers
``call_tool`` steps. Upstream OpenEnv 0.10's own ``HarborEnv`` client (its venv) reads
the Task API and plays a task with the oracle and with a policy that does nothing and
gets the env's scores;
upstream's client port here (in simulation mode: tools as steps) lists the tools, reads
``list_tasks`` and gets a failed
rollout (an unknown policy) as a result with ``ok = false``, a bad argument as a tool
error, and the terminal actions still work on the same server.

Sandboxed built-in tasks (no Docker), served in this process on a loopback port.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from terminal_env._tasks import TASKS_DIR
from terminal_env.harbor_digest import write_digests

from openenv._exceptions import ExecutionError
from openenv.harbor import HarborEnvironment, HarborRolloutResult
from openenv.server import ServerSettings, create_app, serve_in_background

pytestmark = pytest.mark.timeout(300)
UPSTREAM_PY = Path(__file__).resolve().parents[3] / ".venv-upstream" / "bin" / "python"

#: Upstream's client, as its users call it (run from outside this checkout, so that
#: ``openenv`` is upstream's package).
UPSTREAM_SIDE = """
import json, sys
sys.modules["gradio"] = None  # as an install without its web UI: upstream imports it only if present
from openenv.harbor.client import HarborEnv
with HarborEnv(base_url=sys.argv[1]) as env:
    api = [env.splits(), env.num_tasks("test"), env.get_task("test", 1).model_dump(),
           [t.task_id for t in env.get_task_range("test", 0, 5)]]
    solved = env.run_rollout(split="test", task_index=1, harness="oracle")
    idle = env.run_rollout(split="test", task_index=1, harness="null")
print(json.dumps([api, solved.model_dump(mode="json"), idle.model_dump(mode="json")]))
"""


class Served(HarborEnvironment):
    """A subclass, so that ``configure`` changes no class another test uses."""


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    folder = tmp_path_factory.mktemp("harbor-tool") / "mini"
    folder.mkdir()
    for name in ("create-hello", "top-ips"):
        shutil.copytree(TASKS_DIR / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "dataset.toml").write_text(
        '[dataset]\nname = "openenv/mini"\nversion = "1.0"\n\n'
        '[[tasks]]\nname = "openenv/create-hello"\n\n[[tasks]]\nname = "openenv/top-ips"\n\n'
        '[metadata.splits]\ntest = ["create-hello", "top-ips"]\n'
    )
    write_digests(folder)
    Served.configure(datasets=[str(folder)])
    settings = ServerSettings.from_env(env_kwargs={"sandbox": "none", "pool_size": 0})
    with serve_in_background(create_app(Served, settings=settings), start_timeout_s=60) as running:
        yield running.url


def test_upstreams_own_client_runs_a_rollout_on_the_server(server: str) -> None:
    if not UPSTREAM_PY.exists():
        pytest.skip(f"needs upstream OpenEnv 0.10's venv ({UPSTREAM_PY}; scripts/side_venvs.sh upstream)")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    done = subprocess.run(
        [str(UPSTREAM_PY), "-c", UPSTREAM_SIDE, server],
        capture_output=True,
        text=True,
        timeout=240,
        cwd="/",
        env=env,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    api, *rollouts = json.loads(done.stdout.splitlines()[-1])
    splits, count, task, ids = api  # its Task API reads, at /harbor_env/ as on upstream's server
    assert (splits, count, ids) == ([{"name": "test", "type": "test"}], 2, ["create-hello", "top-ips"])
    assert task == {
        "index": 1,
        "task_id": "top-ips",
        "task_name": "top-ips",
        "dataset": "test",
        "instruction": (TASKS_DIR / "top-ips" / "instruction.md").read_text().strip(),
    }
    solved, idle = (HarborRolloutResult.model_validate(r) for r in rollouts)
    assert (solved.task_id, solved.ok, solved.reward) == ("top-ips", True, 1.0)
    assert solved.rewards == {"reward": 1.0}
    assert (solved.harness, solved.dataset) == ("oracle", "test")
    assert idle.ok
    assert idle.reward is not None
    assert idle.reward < 1.0  # the env's verifier scored both


async def test_tools_listed_tasks_read_and_failures_answered(server: str) -> None:
    from openenv.core.mcp_client import MCPToolClient

    async with MCPToolClient(base_url=server) as env:
        env.use_production_mode = False  # tools as call_tool steps, as upstream's HarborEnv calls them
        assert sorted(t.name for t in await env.list_tools()) == ["list_tasks", "run_rollout"]
        rows = json.loads(await env.call_tool("list_tasks", split="test", start=1, stop=5))
        assert [(r["index"], r["task_id"]) for r in rows] == [(1, "top-ips")]
        # upstream's default harness is an agent this env does not have: a failed result, not an error
        failed = HarborRolloutResult.model_validate_json(
            await env.call_tool("run_rollout", split="test", task_index=0, harness="opencode", sandbox="e2b")
        )
        assert (failed.ok, failed.reward) == (False, None)
        assert "unknown policy 'opencode'" in (failed.error or "")
        with pytest.raises(ExecutionError, match=r"unknown arguments \['tasks'\].*\(type: invalid_args\)"):
            await env.call_tool("run_rollout", tasks=3)
        with pytest.raises(ExecutionError, match="no tool 'nope'"):
            await env.call_tool("nope")


async def test_more_rollouts_at_once_than_the_loop_has_threads(server: str) -> None:
    """Each rollout's episode needs the server loop's default executor (its reset makes a
    sandbox there): rollouts held on those threads waited on themselves (seen: every
    step past its deadline with 10 at once, on a 6-thread executor)."""
    import asyncio

    from openenv.core.mcp_client import MCPToolClient

    async def one() -> float | None:
        async with MCPToolClient(base_url=server) as env:
            env.use_production_mode = False
            raw = await env.call_tool("run_rollout", split="test", task_index=1, harness="oracle")
            return HarborRolloutResult.model_validate_json(raw).reward

    many = min(32, (os.cpu_count() or 1) + 4) + 2  # asyncio's default executor size, and more
    rewards = await asyncio.wait_for(asyncio.gather(*(one() for _ in range(many))), 120)
    assert rewards == [1.0] * many


async def test_the_terminal_actions_still_work_beside_the_tools(server: str) -> None:
    from terminal_env import MODELS, RunAction, SubmitAction

    from openenv import AsyncEnvClient

    async with AsyncEnvClient(server, MODELS) as env:
        await env.reset(task_id="top-ips", split="test")
        ran = await env.step(RunAction(command="echo hi"))
        assert ran.observation.output.strip() == "hi"
        done = await env.step(SubmitAction())
        assert done.done

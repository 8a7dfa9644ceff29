"""Tasks with an image of their own: the oracle scores 1.0 and wrong answers less, reward
integrity holds against an agent that forges, edits or waits, and each session's
container has no network to reach and keeps its memory and process limits.

Real Docker, real images of the Terminal-Bench-style tasks in harbor_tasks/ (their
``FROM python:3.11-slim`` built on the offline local base where there is one). Skipped
only where no Docker engine answers (the reason says so).
"""

from __future__ import annotations

import asyncio
import shlex
from pathlib import Path
from typing import Any

import pytest
from _harbor_fixtures import TASKS, WRONG, copy_task, docker_base, episode, sh, task_env
from terminal_env import TerminalObservation

from openenv.containers._network import guard_host

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def base() -> str:
    return docker_base()


def solution(task: str) -> str:
    return (TASKS / task / "solution" / "solve.sh").read_text()


def test_every_test_task_has_a_wrong_answer() -> None:
    """The oracle check below covers every task folder in harbor_tasks/ (ten)."""
    assert sorted(WRONG) == sorted(p.name for p in TASKS.iterdir() if p.is_dir())
    assert len(WRONG) == 10


@pytest.mark.parametrize("task", sorted(WRONG))
async def test_oracle_scores_one_and_a_wrong_answer_less(task: str, base: str) -> None:
    async def play(*commands: str) -> TerminalObservation:
        async with task_env(TASKS, base) as env:
            return await episode(env, task, *commands)

    # three sessions at once, each in its own container
    right, wrong, untouched = await asyncio.gather(play(solution(task)), play(WRONG[task]), play())
    assert right.reward == 1.0, right.metadata
    assert wrong.reward is not None
    assert wrong.reward < 1.0, wrong.metadata
    assert untouched.reward == 0.0, untouched.metadata
    breakdown = right.metadata["reward_breakdown"]
    assert breakdown["source"] in ("reward.txt", "reward.json")
    assert "error" not in breakdown


async def test_named_rewards_are_reported_as_a_breakdown(base: str) -> None:
    async with task_env(TASKS, base) as env:
        wrong = await episode(env, "word-counts", WRONG["word-counts"])
    rewards = wrong.metadata["reward_breakdown"]["rewards"]
    assert rewards == {"exists": 1.0, "json_object": 1.0, "counts": 0.0, "reward": 0.0}


#: Each forges a reward its own way, on top of the honest wrong answer.
FORGE = (
    "mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt"
    " && echo '{\"reward\": 1}' > /logs/verifier/reward.json"
)
HACKS = {
    "reward files written ahead": FORGE,
    "reward files read-only and owned": FORGE + " && chmod 444 /logs/verifier/* && chmod 555 /logs/verifier",
    "tests folder planted": "mkdir -p /tests && printf '#!/bin/bash\\n"
    + "echo 1 > /logs/verifier/reward.txt\\n' > /tests/test.sh && chmod 755 /tests/test.sh",
    "logs a file": "rm -rf /logs && echo 1 > /logs",
    "reward dir a symlink": "mkdir -p /logs /tmp/fake && echo 1 > /tmp/fake/reward.txt"
    " && ln -sfn /tmp/fake /logs/verifier",
    "survivor that waits for the verifier": (
        'setsid nohup bash -c \'trap "" TERM HUP INT; while true; do mkdir -p /logs/verifier;'
        " echo 1 > /logs/verifier/reward.txt 2>/dev/null;"
        ' printf "{\\"reward\\": 1}" > /logs/verifier/reward.json;'
        ' [ -d /tests ] && printf "#!/bin/bash\\necho 1 > /logs/verifier/reward.txt\\n" > /tests/test.sh;'
        " sleep 0.01; done'"
        " >/dev/null 2>&1 < /dev/null & disown; sleep 0.2"
    ),
}


@pytest.mark.parametrize("task", ["word-counts", "paid-totals"])  # reward.json / reward.txt
async def test_a_forging_agent_scores_what_the_honest_wrong_answer_scores(task: str, base: str) -> None:
    async with task_env(TASKS, base) as env:
        honest = await episode(env, task, WRONG[task])
        forged = {name: await episode(env, task, WRONG[task], hack) for name, hack in HACKS.items()}
    want = honest.metadata["reward_breakdown"]["rewards"]
    assert honest.reward == 0.0
    for name, obs in forged.items():
        assert obs.reward == honest.reward, (name, obs.metadata)
        assert obs.metadata["reward_breakdown"]["rewards"] == want, (name, obs.metadata)


async def test_the_verifier_never_runs_a_process_of_the_agent(base: str) -> None:
    # A survivor that would have answered correctly once the verifier starts: killed first.
    later = (
        'setsid nohup bash -c \'trap "" TERM HUP; while [ ! -e /tests/test.sh ]; do sleep 0.01; done; '
        + solution("word-counts").replace("'", "'\\''")
        + "' >/dev/null 2>&1 < /dev/null & disown"
    )
    async with task_env(TASKS, base) as env:
        obs = await episode(env, "word-counts", later)
        assert obs.reward == 0.0, obs.metadata


async def test_no_network_by_default_and_no_neighbour_with_one(base: str, tmp_path: Path) -> None:
    copy_task("word-counts", tmp_path)
    copy_task("word-counts", tmp_path, new_name="with-network")
    toml = tmp_path / "with-network" / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", '[environment]\nnetwork_mode = "public"'))
    probe = (
        'python3 -c "import socket,sys\n'
        "s=socket.socket(); s.settimeout(3)\n"
        "try:\n s.connect((sys.argv[1], int(sys.argv[2]))); print('CONNECTED')\n"
        "except OSError as e: print('REFUSED', type(e).__name__)\" "
    )
    async with task_env(tmp_path, base) as a, task_env(tmp_path, base) as b:
        await a.reset(options={"task_id": "word-counts"})
        assert (await sh(a, "ls /sys/class/net")).output.split() == ["lo"]
        assert "REFUSED" in (await sh(a, probe + "1.1.1.1 53")).output
        await a.reset(options={"task_id": "with-network"})
        await b.reset(options={"task_id": "with-network"})
        why = guard_host()  # "" where the host's firewall rule is in place
        firewalled = "host firewalled" if not why else f"host not firewalled: {why}"
        assert (await a.state()).sandbox["network"] == f"openenv-tasks bridge ({firewalled})"
        await sh(a, "python3 -m http.server 8088 --bind 0.0.0.0 >/dev/null 2>&1 &")
        ip = (await sh(a, "hostname -I")).output.split()[0]
        serving = ""
        for _ in range(120):  # it serves (python's start takes seconds on a loaded machine; 30 s+)
            serving = (await sh(a, probe + f"{ip} 8088")).output
            if "CONNECTED" in serving:
                break
            await sh(a, "sleep 0.25")
        assert "CONNECTED" in serving
        assert "REFUSED" in (await sh(b, probe + f"{ip} 8088")).output  # b cannot reach it


SPAWN = """
import subprocess
procs = []
try:
    for _ in range(100):
        procs.append(subprocess.Popen(["sleep", "30"]))
except OSError as exc:
    print("refused:", exc)
print(f"started={len(procs)}")
for p in procs:
    p.kill()
    p.wait()
"""


async def test_memory_and_process_limits_hold_inside(base: str, tmp_path: Path) -> None:
    copy_task("word-counts", tmp_path)
    toml = tmp_path / "word-counts" / "task.toml"
    toml.write_text(toml.read_text().replace("memory_mb = 512", "memory_mb = 64"))
    async with task_env(tmp_path, base, session_limits="memory=1G,pids=64,cpus=1") as env:
        await env.reset(options={"task_id": "word-counts"})
        box = (await env.state()).sandbox
        assert (box["memory_mb"], box["pids"]) == (64, 64)
        hog = await sh(env, "python3 -c 'x = bytearray(256 << 20); print(len(x))'; echo status=$?")
        assert "status=137" in hog.output or "MemoryError" in hog.output, hog.output
        forks = await sh(env, f"python3 -c {shlex.quote(SPAWN)}")
        started = int(forks.output.split("started=")[1].split()[0])
        assert 0 < started < 64, forks.output
        alive = await sh(env, "echo still here")
        assert "still here" in alive.output


async def test_pooled_containers_are_fresh_never_shared_and_removed_at_close(base: str) -> None:
    from openenv.containers._docker import docker_client

    async with task_env(TASKS, base, image_pool_size=1) as env:
        owner = env.resources.images.owner
        seen = []
        for _ in range(3):
            await env.reset(options={"task_id": "word-counts"})
            seen.append((await env.state()).sandbox["container"])
            assert "LEFT" not in (await sh(env, "ls /app")).output  # nothing of the session before
            await sh(env, "touch /app/LEFT")
            await sh(env, "sleep 2")  # time for the pool to refill
        assert len(set(seen)) == 3
    client = docker_client()
    try:
        label = f"openenv.terminal.owner={owner}"
        left = client.containers.list(all=True, filters={"label": label}, ignore_removed=True)
    finally:
        client.close()
    assert left == []


def test_containers_of_a_dead_server_are_swept(base: str) -> None:
    import subprocess

    from terminal_env._container import ContainerBox, ContainerLimits
    from terminal_env._task_images import TaskImages, sweep_orphans
    from terminal_env._tasks import TerminalTask

    from openenv.containers._docker import docker_client
    from openenv.sandbox import SessionLimits

    task = TerminalTask.from_dir(TASKS / "word-counts")
    assert task.image is not None
    images = TaskImages(SessionLimits.off(), base)
    dead = subprocess.Popen(["true"])  # a pid that has exited
    dead.wait()
    client = docker_client()
    try:
        import socket

        tag = images.image(task)
        limits = ContainerLimits.of(task.image, SessionLimits.off())
        orphan = ContainerBox(
            client, tag, task.image, limits, task.id, owner=f"{socket.gethostname()}:{dead.pid}:x"
        )
        alive = ContainerBox(client, tag, task.image, limits, task.id, owner=images.owner)
        try:
            removed = sweep_orphans(client)
            # gone: this sweep's doing, or another test run's sweep on the engine got there first
            assert orphan.id in removed or _gone(client, orphan.id)
            assert alive.id not in removed
            assert not _gone(client, alive.id)
        finally:
            orphan.close()
            alive.close()
    finally:
        images.close()
        client.close()


def _gone(client: Any, container_id: str) -> bool:
    import docker.errors

    try:
        client.containers.get(container_id)
    except docker.errors.NotFound:
        return True
    return False


async def test_the_agent_timeout_ends_and_scores_the_episode(base: str, tmp_path: Path) -> None:
    task = copy_task("word-counts", tmp_path)
    toml = task / "task.toml"
    toml.write_text(toml.read_text().replace("[agent]\ntimeout_sec = 300.0", "[agent]\ntimeout_sec = 2.0"))
    async with task_env(tmp_path, base) as env:
        await env.reset(options={"task_id": "word-counts"})
        first = await sh(env, "echo early")
        assert not first.done
        late = await sh(env, "sleep 5; " + solution("word-counts"))
    assert late.done
    assert late.truncated
    assert late.timed_out  # the command was stopped at the limit: the solution never ran
    assert late.metadata["agent_timeout"] is True
    assert late.reward == 0.0


async def test_the_pool_keeps_the_images_used_last(base: str) -> None:
    from openenv.containers._docker import docker_client

    def owned(owner: str) -> int:
        client = docker_client()
        try:
            label = f"openenv.terminal.owner={owner}"
            return len(client.containers.list(all=True, filters={"label": label}, ignore_removed=True))
        finally:
            client.close()

    async with task_env(TASKS, base, image_pool_size=1) as env:
        images = env.resources.images
        images.max_pooled = 1
        counts = []
        for task in ("word-counts", "paid-totals", "fix-backup-script"):
            await env.reset(options={"task_id": task})
            for _ in range(100):  # the pool refilled and the last session torn down (bounded)
                await asyncio.sleep(0.1)
                if not any(images._filling.values()) and not images._discarding and not env._closing:
                    break
            counts.append(owned(images.owner))
            assert sum(len(r) for r in images._ready.values()) == 1
            assert len(list(images._ready.values())[-1]) == 1  # the image used last
        assert counts == [2, 2, 2]  # the session and one pooled: the older images' went

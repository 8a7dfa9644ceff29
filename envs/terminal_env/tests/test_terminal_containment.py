"""A real ``openenv serve terminal`` at each sandbox level: sessions are isolated, and
every escape attempt is contained while the server and the other sessions keep working."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from _terminal_fixtures import LEVELS, ROOT, served
from terminal_env import MODELS, RestartAction, RunAction

from openenv import AsyncEnvClient
from openenv.sandbox._sandbox import default_root

pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module", params=LEVELS)
def server(request: pytest.FixtureRequest) -> Iterator[Any]:
    with served(str(request.param)) as replica:
        replica.level = request.param
        yield replica


def client(server: Any) -> AsyncEnvClient[Any, Any, Any]:
    return AsyncEnvClient(server.base_url, MODELS, timeout_s=60)


async def sh(env: AsyncEnvClient[Any, Any, Any], command: str, timeout_s: float = 10) -> Any:
    result = await env.step(RunAction(command=command, timeout_s=timeout_s))
    return result.observation


def healthy(server: Any) -> dict[str, Any]:
    r = httpx.get(f"{server.base_url}/health", timeout=10)
    assert r.status_code == 200
    assert server.alive()
    return dict(r.json())


def test_metadata_reports_the_sandbox_in_force(server: Any) -> None:
    meta = httpx.get(f"{server.base_url}/metadata", timeout=10).json()
    sandbox = meta["sandbox"]
    assert sandbox["requested"] == server.level
    assert sandbox["level"] == ("bwrap" if server.level == "strict" else "rlimits")
    assert sandbox["network"] is False
    assert sandbox["network_block"] == ("namespace" if server.level == "strict" else "seccomp")
    assert healthy(server)["sandbox"] == sandbox  # /health reports the same level in force


async def test_four_concurrent_sessions_are_isolated(server: Any) -> None:
    envs = [client(server) for _ in range(4)]
    try:
        await asyncio.gather(*(env.reset(free_shell=True) for env in envs))
        await asyncio.gather(*(sh(env, f"echo {i} > mine.txt; cd /tmp; V={i}") for i, env in enumerate(envs)))
        # side by side: each command waits until the test has seen all four waiting (a barrier)
        token = f"meet-{os.getpid()}-{id(envs)}"
        wait = (f"touch ~/{token}; n=0; "
                f"while [ ! -e ~/{token}.go ] && [ $n -lt 600 ]; do sleep 0.05; n=$((n+1)); done; "
                f'rm -f ~/{token} ~/{token}.go; echo "$V"; cat ~/mine.txt; ls ~')
        running = asyncio.gather(*(sh(env, wait, timeout_s=60) for env in envs))
        try:
            for _ in range(600):
                waiting = list(default_root().glob(f"*/work/{token}"))
                if len(waiting) == 4 or running.done():
                    break
                await asyncio.sleep(0.05)
            assert len(waiting) == 4, f"only {len(waiting)} of the four commands ran at once"
        finally:
            for path in default_root().glob(f"*/work/{token}"):
                path.with_name(f"{token}.go").touch()
        outs = await running
        for i, obs in enumerate(outs):
            assert obs.output.split() == [str(i), str(i), "mine.txt"]
            assert obs.cwd == "/tmp"
    finally:
        await asyncio.gather(*(env.close() for env in envs))


async def test_escape_attempts_are_contained(server: Any, tmp_path: Path) -> None:
    strict = server.level == "strict"
    attacker, bystander = client(server), client(server)
    try:
        await attacker.reset(free_shell=True)
        await bystander.reset(free_shell=True)
        await sh(bystander, "echo s3cret > secret.txt")
        bystander_home = (await sh(bystander, "pwd")).output.strip()

        async def bystander_ok() -> None:
            assert (await sh(bystander, "echo alive")).output == "alive\n"
            healthy(server)

        # busy loop: Ctrl-C at the timeout
        obs = await sh(attacker, "while :; do :; done", timeout_s=0.5)
        assert obs.timed_out
        await bystander_ok()
        # infinite output: bounded
        obs = await sh(attacker, "yes", timeout_s=0.5)
        assert obs.timed_out
        assert len(obs.output) < 20_000
        await bystander_ok()
        # memory bomb: the address-space limit stops it
        obs = await sh(attacker, "python3 -c 'x = bytearray(16 << 30)'")
        assert obs.exit_code == 1
        assert "MemoryError" in obs.output
        await bystander_ok()
        # fork bomb: nproc is per sandbox where each has its own uid (a root server)
        if ROOT:
            await sh(attacker, "b() { b | b & }; b; sleep 2", timeout_s=3)
            await bystander_ok()
            restarted = await attacker.step(RestartAction())  # kills the whole tree
            assert restarted.observation.session_restarted
            assert (await sh(attacker, "echo back")).output == "back\n"
        # writing outside the workdir
        obs = await sh(attacker, f"touch /usr/x /etc/x {Path.cwd()}/x 2>&1; ls /usr/x /etc/x 2>&1")
        assert "No such file" in obs.output
        assert "x" not in await asyncio.to_thread(os.listdir, "/usr")
        # reading the server's files and another session's
        secret = tmp_path / "server-secret"
        secret.write_text("top")
        secret.chmod(0o600)
        others = f"{bystander_home}/secret.txt {default_root()}/*/work/secret.txt"  # the server's sandboxes
        obs = await sh(attacker, f"cat {secret} {others}")
        assert "top" not in obs.output
        assert "s3cret" not in obs.output
        if strict:
            assert "No such file" in (await sh(attacker, f"ls {Path.cwd()}")).output
        # killing the server
        obs = await sh(attacker, f"kill -9 {server.proc.pid}; echo rc=$?")
        assert "rc=1" in obs.output
        await bystander_ok()
        # network egress, to the server's own port too
        port = server.base_url.rsplit(":", 1)[1]
        connect = f"import socket; socket.create_connection(('127.0.0.1', {port}), 2); print('connected')"
        probe = f'python3 -c "{connect}"'
        obs = await sh(attacker, probe)
        assert "connected" not in obs.output
        assert obs.exit_code == 1
        # rlimits: no network namespace, but socket() is refused (seccomp)
        assert ("ConnectionRefusedError" if strict else "PermissionError") in obs.output
        await bystander_ok()
    finally:
        await attacker.close()
        await bystander.close()


async def test_no_process_survives_the_session(server: Any) -> None:
    env = client(server)
    await env.reset(free_shell=True)
    await sh(env, f"sleep {_SLEEP} & nohup sleep {_SLEEP} >/dev/null 2>&1 &")
    await sh(env, f"setsid sleep {_SLEEP} & disown -a; echo ok")
    for _ in range(400):  # bounded: 20 s
        if _sleepers() >= 3:
            break
        await asyncio.sleep(0.05)
    assert _sleepers() >= 3
    await env.close()
    for _ in range(200):  # the server closes the session as the connection ends
        if not _sleepers():
            break
        await asyncio.sleep(0.05)
    assert _sleepers() == 0
    healthy(server)


#: a duration no other test run uses: ``_sleepers`` counts this run's processes only
_SLEEP = f"1234.{os.getpid()}"


def _sleepers() -> int:
    count = 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                if f.read() == f"sleep\0{_SLEEP}\0".encode():
                    count += 1
        except OSError:
            continue
    return count


#: Each mount the session sees, and the device of a file it could create there (found
#: by ``find -writable``: the first directory it may write in, a few levels down).
_WRITABLE_MOUNTS = r"""
for m in $(cut -d' ' -f5 /proc/self/mountinfo | sort -u); do
  d=$(find "$m" -xdev -maxdepth 3 -type d -writable -print -quit 2>/dev/null)
  [ -n "$d" ] && f=$(mktemp -p "$d" 2>/dev/null) && { echo "$m $(stat -c %d "$f")"; rm -f "$f"; }
done; echo "workspace $(stat -c %d ~)"
"""


async def test_every_place_a_session_can_write_is_on_its_disk_limited_tmpfs(server: Any) -> None:
    """``/dev/shm``, ``/tmp`` and the working directory share one size-limited tmpfs;
    bubblewrap's own tmpfs mounts (the root, ``/dev``: half the host's memory each) are
    read-only, so no byte the session stores escapes its disk limit."""
    if server.level != "strict":
        pytest.skip("without bubblewrap there is no mount namespace: the container is the boundary")
    env = client(server)
    try:
        await env.reset(free_shell=True)
        lines = (await sh(env, _WRITABLE_MOUNTS)).output.split("\n")
        found = dict(line.rsplit(" ", 1) for line in lines if line)
        workspace = found.pop("workspace")
        assert {"/workspace", "/tmp", "/dev/shm"} <= found.keys()
        assert {m: dev for m, dev in found.items() if dev != workspace} == {}
        refused = await sh(env, "touch /x /dev/x 2>&1; df --output=size /dev/shm /tmp ~ | tail -n +2 | uniq")
        assert refused.output.count("Read-only file system") == 2
        assert len(refused.output.splitlines()) == 3  # two refusals, one size: one tmpfs
    finally:
        await env.close()

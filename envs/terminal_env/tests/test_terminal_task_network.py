"""A task container with the network allowed reaches neither the host nor another
session's container (issue 32): it joins ``openenv-tasks``, a bridge with ICC off whose
new connections to the host the host's firewall drops (openenv/containers/_network.py).

Real Docker, the ``word-counts`` test task's image (built once, cached). Nothing listens on
the host for the containers: the test holds a port on 127.0.0.1 only, so the gateway's
same port is closed. Without the rule the host answers at once ("connection refused");
with it the connection attempt is dropped and times out.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from _harbor_fixtures import copy_task, docker_base, sh, task_env

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

#: The gateway of the container's default route, read from /proc (no `ip` in the image).
GATEWAY = (
    "python3 -c \"import socket,struct; print(next(socket.inet_ntoa(struct.pack('<L', int(f[2], 16)))"
    " for f in (l.split() for l in open('/proc/net/route')) if f[1] == '00000000'))\""
)


def probe(address: str, port: int) -> str:
    """Bash's own connect, bounded at 3 s: its exit status (124: no answer) and message."""
    return f"timeout 3 bash -c '</dev/tcp/{address}/{port}' 2>&1; echo rc=$?"


async def test_a_public_task_container_reaches_neither_the_host_nor_a_neighbour(tmp_path: Path) -> None:
    from openenv.containers._network import guard_host

    base = docker_base()
    if why := guard_host():
        pytest.skip(f"the host's firewall rule cannot be installed here: {why}")
    copy_task("word-counts", tmp_path, new_name="with-network")
    toml = tmp_path / "with-network" / "task.toml"
    toml.write_text(toml.read_text().replace("[environment]", '[environment]\nnetwork_mode = "public"'))
    with socket.socket() as held:  # the port is closed at the gateway's address
        held.bind(("127.0.0.1", 0))
        held.listen(1)
        port = held.getsockname()[1]
        async with task_env(tmp_path, base) as a, task_env(tmp_path, base) as b:
            await a.reset(options={"task_id": "with-network"})
            await b.reset(options={"task_id": "with-network"})
            gateway = (await sh(a, GATEWAY)).output.strip().splitlines()[-1]
            neighbour = (await sh(b, "hostname -I")).output.split()[0]
            name = (await sh(b, "hostname")).output.split()[0]
            # both probes at once (about 3 s in all); each line says which it is
            both = (
                f"(echo host $({probe(gateway, port)})) & (echo neighbour $({probe(neighbour, port)})) & wait"
            )
            lines = (await sh(a, both, timeout_s=30)).output.splitlines()
            host = next(line for line in lines if line.startswith("host "))
            next_door = next(line for line in lines if line.startswith("neighbour "))
            assert host.endswith("rc=124"), host  # dropped: today "Connection refused rc=1"
            assert next_door.endswith("rc=124"), next_door
            # the engine's DNS (127.0.0.11, in the container's own namespace) still answers
            resolved = (await sh(a, f"getent hosts {name}; echo rc=$?")).output
            assert neighbour in resolved, resolved


def test_where_the_rule_cannot_be_installed_one_warning_says_why(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:

    from openenv.containers import _network

    monkeypatch.setattr(_network, "_guarded", {})  # this process's memo, fresh
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    with caplog.at_level("WARNING", logger="openenv.containers"):
        assert _network.guard_host() == "this process is not root"
        assert _network.guard_host() == "this process is not root"  # asked again: no second line
    (record,) = caplog.records
    assert "can reach this host (this process is not root)" in record.getMessage()
    assert "\n" not in record.getMessage()


def test_the_rule_is_installed_once(monkeypatch: pytest.MonkeyPatch) -> None:
    import shutil
    import subprocess

    from openenv.containers import _network

    if os.geteuid() != 0 or shutil.which("iptables") is None:
        pytest.skip("installing the host's firewall rule needs root and iptables")
    for _ in range(2):  # two processes' first use: -C finds the first one's rule
        monkeypatch.setattr(_network, "_guarded", {})
        assert _network.guard_host() == ""
    tools = ["iptables"] + (["ip6tables"] if os.path.exists("/proc/net/if_inet6") else [])
    for tool in tools:
        listed = subprocess.run([tool, "-S", "INPUT"], capture_output=True, text=True, check=True).stdout
        assert listed.count(f"-i {_network.TASK_BRIDGE} ") == 1, (tool, listed)


def test_the_check_and_insert_wait_for_the_hosts_firewall_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Check-then-insert is one step across processes: while another server holds
    ``FIREWALL_LOCK`` (it may be between its ``-C`` and its ``-I``), no ``iptables`` call is
    made; two servers starting at once would otherwise both insert the rule."""
    import fcntl
    import shutil
    import threading

    from openenv.containers import _network

    if os.geteuid() != 0 or shutil.which("iptables") is None:
        pytest.skip("the firewall rule is installed only as root with iptables")
    calls: list[tuple[str, str]] = []
    monkeypatch.setattr(_network, "_firewall", lambda tool, op: (calls.append((tool, op)), (0, ""))[1])
    monkeypatch.setattr(_network, "_guarded", {})
    fd = os.open(_network.FIREWALL_LOCK, os.O_RDWR | os.O_CREAT, 0o600)  # "another server"
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        result: list[str] = []
        worker = threading.Thread(target=lambda: result.append(_network.guard_host()), daemon=True)
        worker.start()
        worker.join(0.5)  # bounded: time enough to have called iptables were it not waiting
        assert worker.is_alive()
        assert calls == []
        fcntl.flock(fd, fcntl.LOCK_UN)
        worker.join(30)
    finally:
        os.close(fd)
    assert result == [""]
    assert calls
    assert all(op == "-C" for _, op in calls)

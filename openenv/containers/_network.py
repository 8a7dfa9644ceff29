"""The Docker network the project's containers run on.

On Docker's default ``bridge`` network every container reaches every other's server
(an env server has no token by default). ``DockerProvider`` puts its containers on
``ISOLATED_NETWORK`` instead: a bridge network with inter-container traffic off
(``com.docker.network.bridge.enable_icc=false``), made on first use and left in
place, as ``docker0`` is. A container there still reaches the outside through NAT,
and its port is still published on the host's 127.0.0.1 only; another container can
reach neither its address nor that published port (which the host's loopback holds).
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from typing import Any

from .._exceptions import ProviderError

#: The network ``DockerProvider`` uses unless told otherwise.
ISOLATED_NETWORK = "openenv-isolated"
ICC_OPTION = "com.docker.network.bridge.enable_icc"
LABEL_NETWORK = "openenv.network"

_making = threading.Lock()


def _find(client: Any, name: str) -> Any:
    # The engine's name filter matches substrings. Two processes making it at once on an
    # engine that allows twin names leave two: every process picks the oldest.
    found = [n for n in client.networks.list(names=[name]) if n.name == name]
    found.sort(key=lambda n: (str(n.attrs.get("Created", "")), n.id))
    return found[0] if found else None


def network_id(client: Any, name: str = ISOLATED_NETWORK) -> str:
    """The ID of the network ``name``; ``ISOLATED_NETWORK`` is made when missing.

    ``ProviderError``: another name that the engine does not have, or an
    ``ISOLATED_NETWORK`` (made by hand) on which containers can reach each other.
    """
    import docker.errors

    with _making:
        found = _find(client, name)
        if found is None and name == ISOLATED_NETWORK:
            try:
                client.networks.create(
                    name,
                    driver="bridge",
                    options={ICC_OPTION: "false"},
                    labels={LABEL_NETWORK: "isolated"},
                    check_duplicate=True,
                )
            except docker.errors.APIError as exc:
                if exc.status_code != 409:  # 409: another process made it just now
                    raise ProviderError(
                        f"docker could not create the network {name!r}: {exc.explanation or exc}"
                    ) from None
            found = _find(client, name)
        if found is None:
            raise ProviderError(
                f"no Docker network {name!r}: create it (`docker network create {name}`) "
                f"or leave the network out (default {ISOLATED_NETWORK!r})"
            )
    if name == ISOLATED_NETWORK and (found.attrs.get("Options") or {}).get(ICC_OPTION) != "false":
        raise ProviderError(
            f"the Docker network {name!r} lets containers reach each other (ICC is on); "
            f"remove it (`docker network rm {name}`) and the next start makes it with ICC off"
        )
    return str(found.id)


#: The network a terminal task's container with the network allowed joins: a bridge of its
#: own (ICC off, as ``ISOLATED_NETWORK``), whose interface ``TASK_BRIDGE`` the host's
#: firewall keeps from opening connections to the host (``guard_host``).
TASK_NETWORK = "openenv-tasks"
TASK_BRIDGE = "openenv-tasks"  # the interface's name (15 characters at most)
BRIDGE_NAME_OPTION = "com.docker.network.bridge.name"
#: The rule, for ``iptables`` and ``ip6tables`` alike: drop what the bridge opens toward the
#: host itself (its gateway address, or any other of the host's); replies to connections
#: the host opened, and traffic forwarded to the outside (NAT), are untouched.
HOST_RULE = tuple(f"INPUT -i {TASK_BRIDGE} -m conntrack ! --ctstate ESTABLISHED,RELATED -j DROP".split())

_guarded: dict[str, str] = {}  # per process: "" (the rule is in place) or why it is not


def _firewall(tool: str, action: str) -> tuple[int, str]:
    import subprocess

    try:
        argv = [tool, "-w", "5", action, *HOST_RULE]
        done = subprocess.run(argv, capture_output=True, timeout=15, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return -1, str(exc)
    return done.returncode, (done.stderr or done.stdout).decode(errors="replace").strip()


#: Held (``flock``) while a server checks for and inserts ``HOST_RULE``: two servers
#: starting at once would both find it missing and insert it twice.
FIREWALL_LOCK = "/run/lock/openenv-task-firewall.lock"


@contextlib.contextmanager
def _host_lock(take: bool) -> Iterator[None]:
    """``FIREWALL_LOCK``, exclusively, when ``take`` (as root); else nothing to hold."""
    if not take:
        yield
        return
    import fcntl
    import os

    os.makedirs(os.path.dirname(FIREWALL_LOCK), exist_ok=True)
    fd = os.open(FIREWALL_LOCK, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)  # held for two iptables calls at most
        yield
    finally:
        os.close(fd)


def guard_host() -> str:
    """Install ``HOST_RULE`` (``iptables``, and ``ip6tables`` where IPv6 is on) once per
    process, checking with ``-C`` before inserting with ``-I``; ``""`` when it is in place,
    else one line saying why not (not root, no ``iptables``, refused), also logged once as a
    warning. It acts on this host's firewall: an engine on another host is not guarded."""
    import logging
    import os
    import shutil

    with _making:
        if TASK_BRIDGE in _guarded:
            return _guarded[TASK_BRIDGE]
        tools = ["iptables"] + (["ip6tables"] if os.path.exists("/proc/net/if_inet6") else [])
        why = ""
        if os.geteuid() != 0:
            why = "this process is not root"
        with _host_lock(not why):  # check-then-insert is one step across this host's servers
            for tool in tools:
                if why:
                    break
                if shutil.which(tool) is None:
                    why = f"no {tool} on PATH"
                    break
                rc, out = _firewall(tool, "-C")
                if rc == 0:
                    continue
                rc, out = _firewall(tool, "-I")
                if rc != 0:
                    why = f"{tool} refused the rule: {out or f'exit status {rc}'}"
        if why:
            logging.getLogger("openenv.containers").warning(
                "task containers with the network allowed can reach this host (%s): no firewall rule "
                "on %s (`iptables -I %s`)",
                why,
                TASK_BRIDGE,
                " ".join(HOST_RULE),
            )
        _guarded[TASK_BRIDGE] = why
        return why


def task_network_id(client: Any) -> str:
    """The ID of ``TASK_NETWORK`` (made when missing, ICC off, its bridge ``TASK_BRIDGE``),
    with ``guard_host`` run once: where the rule cannot be installed the network is still
    given (the warning says so). ``ProviderError`` as ``network_id``."""
    import docker.errors

    with _making:
        found = _find(client, TASK_NETWORK)
        if found is None:
            try:
                client.networks.create(
                    TASK_NETWORK,
                    driver="bridge",
                    options={ICC_OPTION: "false", BRIDGE_NAME_OPTION: TASK_BRIDGE},
                    labels={LABEL_NETWORK: "tasks"},
                    check_duplicate=True,
                )
            except docker.errors.APIError as exc:
                if exc.status_code != 409:
                    raise ProviderError(
                        f"docker could not create the network {TASK_NETWORK!r}: {exc.explanation or exc}"
                    ) from None
            found = _find(client, TASK_NETWORK)
        if found is None:
            raise ProviderError(f"no Docker network {TASK_NETWORK!r} after creating it")
    options = found.attrs.get("Options") or {}
    if options.get(ICC_OPTION) != "false" or options.get(BRIDGE_NAME_OPTION) != TASK_BRIDGE:
        raise ProviderError(
            f"the Docker network {TASK_NETWORK!r} was not made by openenv (ICC on, or its bridge is not "
            f"{TASK_BRIDGE!r}); remove it (`docker network rm {TASK_NETWORK}`) and the next start makes it"
        )
    guard_host()
    return str(found.id)

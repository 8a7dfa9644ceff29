"""The project's containers cannot reach each other's servers (real engine).

Two echo containers from ``DockerProvider``: from inside one, the other's server is
tried at its container address and at its published port through the gateway; both
must fail, while the container's own server and the host's view of both answer.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from openenv._exceptions import ProviderError
from openenv.containers import DockerProvider
from openenv.containers._network import ICC_OPTION, ISOLATED_NETWORK

#: Run inside a container: "open" or the error, for one TCP connection (3 s at most).
_CONNECT = (
    "import socket, sys\n"
    "try:\n"
    "    socket.create_connection((sys.argv[1], int(sys.argv[2])), timeout=3).close()\n"
    "    print('open')\n"
    "except OSError as e:\n"
    "    print(type(e).__name__)\n"
)


def _connect_from(container: Any, host: str, port: int) -> str:
    code, out = container.exec_run(["python3", "-c", _CONNECT, host, str(port)])
    assert code == 0, out
    return str(out.decode().strip())


def _address(container: Any) -> tuple[str, str, str]:
    """(network name, IP address, gateway) of a container on its one network."""
    container.reload()
    ((name, net),) = container.attrs["NetworkSettings"]["Networks"].items()
    return name, net["IPAddress"], net["Gateway"]


def test_env_containers_cannot_reach_each_other(docker: Any, echo_image: str) -> None:
    provider = DockerProvider(echo_image, start_timeout_s=60)
    a = provider.start()
    try:
        b = provider.start()
        try:
            net_a, ip_a, gateway = _address(a.container)
            net_b, ip_b, _ = _address(b.container)
            assert net_a == net_b == ISOLATED_NETWORK
            assert docker.networks.get(ISOLATED_NETWORK).attrs["Options"][ICC_OPTION] == "false"
            b_host_port = int(b.base_url.rsplit(":", 1)[1])

            # The probe works: a container reaches its own server...
            assert _connect_from(a.container, "127.0.0.1", 8000) == "open"
            # ...and not the other's, by address or by its published port via the gateway.
            assert _connect_from(a.container, ip_b, 8000) != "open"
            assert _connect_from(b.container, ip_a, 8000) != "open"
            assert _connect_from(a.container, gateway, b_host_port) != "open"
            # The host still reaches both, on 127.0.0.1 only.
            for replica in (a, b):
                assert replica.base_url.startswith("http://127.0.0.1:")
                assert httpx.get(f"{replica.base_url}/health", timeout=5).status_code == 200
        finally:
            b.stop()
    finally:
        a.stop()


def test_a_named_network_that_does_not_exist_is_a_clear_error(docker: Any, echo_image: str) -> None:
    with pytest.raises(ProviderError, match="no Docker network 'openenv-test-no-such-network'"):
        DockerProvider(echo_image, network="openenv-test-no-such-network").start()


def test_the_probe_sees_what_the_default_bridge_lets_through(docker: Any, echo_image: str) -> None:
    # The control: on Docker's default network the same probe does reach the other server.
    provider = DockerProvider(echo_image, start_timeout_s=60, network="bridge")
    a = provider.start()
    try:
        b = provider.start()
        try:
            _, ip_b, _ = _address(b.container)
            assert _connect_from(a.container, ip_b, 8000) == "open"
        finally:
            b.stop()
    finally:
        a.stop()

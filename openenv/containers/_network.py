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

import threading
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

"""One session's network and the compose services beside its container (see _compose.py).

The network is the session's own and ``internal``, and the host has no address on its
bridge: its containers reach each other by service name and nothing else (not the
outside, not the host, not another session's containers). Each side
service runs under Docker's init with the session's limits, ``no-new-privileges`` and
the owner label, so the server's shutdown and the orphan sweep remove it as they do the
session's own container; ``close`` removes them and then the network.
"""

from __future__ import annotations

import contextlib
import secrets
from typing import Any

from openenv._exceptions import ExecutionError

from ._compose import MAIN, ComposeSpec
from ._compose_health import wait_healthy

#: The host gets no address on the session network's bridge: ``internal`` alone drops
#: forwarded traffic but leaves the host itself reachable at the bridge's gateway.
NO_HOST_ADDRESS = "com.docker.network.bridge.inhibit_ipv4"


class SessionServices:
    """The session network and its started side services (made in a thread: blocks)."""

    def __init__(
        self,
        client: Any,
        spec: ComposeSpec,
        tags: dict[str, str],
        labels: dict[str, str],
        run_kw: dict[str, Any],
    ) -> None:
        self.client = client
        self.containers: list[Any] = []
        self.name = f"openenv-session-{secrets.token_hex(6)}"
        try:
            self.network = client.networks.create(
                self.name, driver="bridge", internal=True, labels=labels, options={NO_HOST_ADDRESS: "true"}
            )
        except Exception as exc:  # the engine's refusal, said in one line
            why = " ".join(str(getattr(exc, "explanation", None) or exc).split())[:300]
            raise ExecutionError(f"the session network for the compose services was refused: {why}") from None
        try:
            for service in spec.services:
                kw: dict[str, Any] = {
                    "detach": True,
                    "init": True,
                    "labels": labels,
                    "security_opt": ["no-new-privileges"],
                    "environment": dict(service.environment),
                    "network": self.name,
                    "networking_config": self.endpoint(service.name),
                    "hostname": service.name,
                    **run_kw,
                }
                if service.command is not None:
                    kw["command"] = service.command
                if service.working_dir:
                    kw["working_dir"] = service.working_dir
                if service.healthcheck is not None:  # healthy before what follows starts
                    kw["healthcheck"] = service.healthcheck.docker()
                self.containers.append(client.containers.run(tags[service.name], **kw))
                if service.healthcheck is not None:
                    wait_healthy(self.containers[-1], service.name, service.healthcheck)
        except Exception as exc:
            self.close()
            why = " ".join(str(getattr(exc, "explanation", None) or exc).split())[:300]
            raise ExecutionError(f"a compose service did not start: {why}") from None

    def endpoint(self, alias: str = MAIN) -> dict[str, Any]:
        """``networking_config`` that joins a container to the session network as ``alias``."""
        return {self.name: self.client.api.create_endpoint_config(aliases=[alias])}

    def close(self) -> None:
        """Remove the side services, then the network. Idempotent."""
        import docker.errors

        while self.containers:
            with contextlib.suppress(docker.errors.APIError):
                self.containers.pop().remove(force=True)
        with contextlib.suppress(docker.errors.APIError):
            self.network.remove()


def remove_networks(client: Any, label_filter: str) -> None:
    """Remove the session networks that carry ``label_filter`` (``key=value`` or ``key``)."""
    import docker.errors

    for network in client.networks.list(filters={"label": label_filter}):
        with contextlib.suppress(docker.errors.APIError):
            network.remove()

"""An agent CLI run in the terminal env's Docker image, its model calls captured.

``run_agent_in_image`` starts one container of the image (``openenv build
envs/terminal_env``) per run: no network but its own loopback (``--network none``), a
memory and process limit, and read-only at ``/run/openenv`` a folder holding the capture
session's endpoint socket (``CaptureServer.open_endpoint``), the relay and the driver
(``_image_main.py``), and with ``tools_url`` the env's MCP tools' socket (the same ways
out as in a sandbox: ``_agents.ways_out``); the agent's install folder read-only at its
own path. Inside, the
driver resets the env's own ``TerminalEnv`` to the task, runs the agent in that session's
sandbox with ``127.0.0.1:PORT`` relayed to the socket, and has the task's verifier score
the run. The agent reaches its capture session (and the env's tools, when given) and
nothing else: no env server listens in the container, and the host is not on its network.

The agent's program must run on the image's system (Debian 12 with glibc, no Node.js):
Claude Code's and OpenCode's native builds do, mini-swe-agent's venv of Python 3.11 (the
image's ``/usr/bin/python3``), and Codex CLI's native build (``AgentCLI.native``),
started directly instead of through its Node.js wrapper; Gemini CLI is Node.js only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shutil
import tempfile
import time
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Unpack

from .._exceptions import ProviderError
from ._agents import _HOME, DEFAULT_TIMEOUT_S, AgentOptions, AgentRun, launch, relayed, ways_out

__all__ = ["TASK_INSTRUCTION", "ImageAgentRun", "run_agent_in_image", "run_in_image"]

_DRIVER = Path(__file__).with_name("_image_main.py")
_INNER = "/run/openenv"
#: The label each agent container carries (its value: the capture session's id).
LABEL = "openenv.harness.session"
#: An argument that the driver in the container replaces with the task's instruction.
TASK_INSTRUCTION = "{instruction}"


@dataclass
class ImageAgentRun(AgentRun):
    """An ``AgentRun`` in a container: also the task's ``reward``, the verifier's detail
    (``breakdown``) and the sandbox level inside."""

    reward: float | None = None
    level: str = ""
    breakdown: dict[str, Any] | None = None


def _container_run(client: Any, image: str, command: list[str], binds: dict[str, str], **kw: Any) -> Any:
    volumes = {host: {"bind": inner, "mode": "ro"} for host, inner in binds.items()}
    return client.containers.run(
        image, command, detach=True, network_mode="none", init=True, volumes=volumes, **kw
    )


async def _logs(container: Any, *, stdout: bool) -> str:
    data = await asyncio.to_thread(container.logs, stdout=stdout, stderr=not stdout)
    return bytes(data).decode(errors="replace")


def _folder() -> Path:
    """A fresh folder for ``/run/openenv``, with the driver, readable by all (the container's
    uid); ``ways_out`` adds the relay and the sockets."""
    folder = Path(tempfile.mkdtemp(prefix="openenv-agent-"))
    folder.chmod(0o755)
    (folder / "image_main.py").write_bytes(_DRIVER.read_bytes())
    (folder / "image_main.py").chmod(0o644)
    return folder


async def run_in_image(
    image: str,
    argv: list[str],
    capture: Any,
    session_id: str,
    task_id: str,
    *,
    env: Mapping[str, str] | None = None,
    ro_binds: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    label: str = "",
    memory: str = "2g",
    tools_url: str | None = None,
) -> ImageAgentRun:
    """Run ``argv`` (an argument ``TASK_INSTRUCTION`` in it becomes the task's instruction) in a
    container of terminal env image ``image``, in a session reset to ``task_id``, its one
    way out ``http://127.0.0.1:PORT``: capture session ``session_id`` of ``capture``; with
    ``tools_url`` (an MCP server on a host loopback port: a ``HarnessMCPBridge``'s URL)
    also ``127.0.0.1:TOOLS_PORT``, which reaches that port and nothing else.
    ``ro_binds`` (host path: path inside) are bound in read-only.

    Raises:
        ValidationFailed: ``tools_url`` is not an http URL on loopback.
        ProviderError: no Docker engine, or the container ended without a verdict (an
            image without the terminal env, an unknown task: the reason is in the message).
    """
    from ..containers._docker import docker_client

    folder = _folder()
    args = {
        "task_id": task_id,
        "argv": relayed(argv, tools_url is not None),
        "env": {"HOME": _HOME, **(env or {})},
        "timeout_s": timeout_s,
    }
    container: Any = None
    client: Any = None
    start = time.monotonic()
    try:
        async with ways_out(folder, capture, session_id, tools_url) as endpoint:
            client = await asyncio.to_thread(docker_client)
            container = await asyncio.to_thread(
                _container_run,
                client,
                image,
                ["python3", f"{_INNER}/image_main.py", json.dumps(args)],
                {str(folder): _INNER, **(ro_binds or {})},
                mem_limit=memory,
                memswap_limit=memory,
                pids_limit=512,
                name=f"openenv-agent-{uuid.uuid4().hex[:12]}",
                labels={LABEL: session_id},
            )
            try:  # the run's own timeout is the driver's; this bounds the reset and the verdict too
                status = await asyncio.to_thread(container.wait, timeout=timeout_s + 120)
            except Exception:  # the engine's read timed out: the container is stuck
                await asyncio.to_thread(container.kill)
                raise ProviderError(f"the agent's container ran past {timeout_s + 120:.0f} s") from None
            out, err = await _logs(container, stdout=True), await _logs(container, stdout=False)
    finally:
        if container is not None:
            with contextlib.suppress(Exception):
                await asyncio.to_thread(container.remove, force=True)
        if client is not None:
            client.close()
        shutil.rmtree(folder, ignore_errors=True)
    lines = out.strip().splitlines()
    try:
        done = json.loads(lines[-1]) if lines else None
    except ValueError:
        done = None
    if not isinstance(done, dict):
        code = status.get("StatusCode") if isinstance(status, dict) else status
        raise ProviderError(f"the agent's container exited {code} without a verdict: {err.strip()[-500:]}")
    return ImageAgentRun(
        agent=label or argv[0],
        exit_code=done["exit_code"],
        stdout=done["stdout"],
        stderr=done["stderr"],
        timed_out=done["timed_out"],
        duration_s=time.monotonic() - start,
        calls=endpoint.counts.calls,
        refused=list(endpoint.counts.refused),
        reward=done["reward"],
        level=done["level"],
        breakdown=done.get("breakdown"),
    )


async def run_agent_in_image(
    image: str,
    name: str,
    task_id: str,
    capture: Any,
    session_id: str,
    *,
    instruction: str = TASK_INSTRUCTION,
    memory: str = "2g",
    **options: Unpack[AgentOptions],
) -> ImageAgentRun:
    """Run agent ``name`` on terminal task ``task_id`` in a container of image ``image``
    (``run_in_image``), its model calls going to capture session ``session_id`` only;
    ``instruction``: what the agent is told (by default the task's own instruction);
    ``options`` (``model``, ``timeout_s``, ``root``, ``extra_env``, ``tools_url``) as
    ``AgentOptions`` says, the same as ``run_agent``'s: ``tools_url``'s MCP server is
    relayed into the container.

    Raises:
        ValidationFailed: an unknown or uninstalled agent, one that needs Node.js, or
            tools for one that takes none.
        ProviderError: as ``run_in_image``.
    """
    run = launch(name, instruction, session_id, native=True, **options)
    return await run_in_image(
        image, run.argv, capture, session_id, task_id, memory=memory, **run.runner_args()
    )

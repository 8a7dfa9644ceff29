"""The terminal env's harness config: ``/harness`` on ``openenv serve terminal_env``.

Each ``/harness?agent=AGENT&task_id=TASK[&model=MODEL]`` connection runs agent CLI
``AGENT`` (default ``claude-code``) on terminal task ``TASK`` in its own session's
sandbox (``terminal_task_env``), its model calls going through a capture proxy this
process starts on first use, in front of the OpenAI-compatible server
``OPENENV_HARNESS_LLM_URL`` names (``OPENENV_HARNESS_MODEL``: the model name asked
for, default ``MODEL`` or ``scripted``); the server's ``--env-kwargs`` make the
terminal env. With ``OPENENV_HARNESS_IMAGE=IMAGE`` set (a terminal env image: ``openenv
build envs/terminal_env``) each connection's agent runs in a container of ``IMAGE`` instead,
on the image's own terminal env (``terminal_task_env(..., image=IMAGE)``; the server's
``--env-kwargs`` then make only its ``/ws`` env); an image that is not there is refused
at reset, in the ``error`` frame. The proxy stops with the server (``close``). Its session
routes take an admin key nobody is given: each agent reaches only its own session, through
its socket.
"""

from __future__ import annotations

import os
import secrets
import threading
from typing import Any

from ._agentic import HarnessStartupError

__all__ = ["IMAGE_VAR", "LLM_URL_VAR", "close", "shared_capture", "terminal_harness"]

LLM_URL_VAR = "OPENENV_HARNESS_LLM_URL"
IMAGE_VAR = "OPENENV_HARNESS_IMAGE"
_OPTIONS = frozenset({"agent", "task_id", "model"})
_lock = threading.Lock()
_capture: Any = None


def shared_capture() -> Any:
    """This process's capture proxy for served harnesses, started on first use.

    Raises:
        HarnessStartupError: ``OPENENV_HARNESS_LLM_URL`` is not set.
    """
    global _capture
    with _lock:
        if _capture is None:
            url = os.environ.get(LLM_URL_VAR)
            if not url:
                raise HarnessStartupError(
                    f"set {LLM_URL_VAR} to the OpenAI-compatible server the agents' model calls go to"
                )
            from ..capture import CaptureServer

            _capture = CaptureServer(llm_url=url, port=0, admin_key=secrets.token_urlsafe(24)).start()
        return _capture


def close() -> None:
    """Stop the capture proxy, if one was started."""
    global _capture
    with _lock:
        capture, _capture = _capture, None
    if capture is not None:
        capture.stop()


def terminal_harness(options: dict[str, str], env_kwargs: dict[str, Any]) -> Any:
    """A ``TerminalTaskHarness`` for one ``/harness`` connection (see the module doc).

    Raises:
        HarnessStartupError: an unknown option, no ``task_id``, or no model server.
    """
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise HarnessStartupError(
            f"unknown /harness option {unknown[0]!r}: use {', '.join(sorted(_OPTIONS))}"
        )
    if not options.get("task_id"):
        raise HarnessStartupError("say which task: /harness?task_id=TASK (and agent=AGENT)")
    from ._cli_agent import terminal_task_env

    model = options.get("model") or os.environ.get("OPENENV_HARNESS_MODEL") or "scripted"
    agent, task_id = options.get("agent") or "claude-code", options["task_id"]
    image = os.environ.get(IMAGE_VAR)
    if image:  # the image's own terminal env: the server's env kwargs are its /ws env's
        return terminal_task_env(agent, task_id, shared_capture(), model=model, image=image)
    return terminal_task_env(agent, task_id, shared_capture(), model=model, **env_kwargs)

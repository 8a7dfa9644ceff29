"""Inside a terminal env image: one task, one agent, the task's verdict (``run_agent_in_image``).

Run as ``python3 /run/openenv/image_main.py ARGS_JSON`` in a container of the terminal
env's image started with no network but loopback, the session's endpoint socket and the
agent bound in at ``/run/openenv``. It resets a ``TerminalEnv`` to ``task_id``, runs
``argv`` (the agent behind the relay: ``127.0.0.1:PORT`` to the endpoint socket, and
``TOOLS_PORT`` to the env's tools when given; ``"{instruction}"`` replaced by the task's)
in that session's sandbox, submits, and prints one JSON line: the agent's exit, its
output, the reward.

Standard library and the image's own ``terminal_env`` only: the file is copied in beside
the relay, so it works with any image of the env that has the same public API.
The container is the session's boundary. The sandbox inside is at the ``rlimits`` level
(no namespaces under Docker's defaults); its seccomp filter would take every socket but
``AF_UNIX``, so the network is left to the container (``--network none``: loopback only,
where nothing but the relay listens), and the per-process address-space limit to the
container's memory limit (Claude Code's runtime reserves more than it).
"""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
import sys
from typing import Any


async def _main(args: dict[str, Any]) -> dict[str, Any]:
    terminal_env = importlib.import_module("terminal_env")  # the image's own
    env = terminal_env.TerminalEnv(pool_size=0)
    try:
        obs = await env.reset(options={"task_id": args["task_id"]})
        box = env.session_sandbox
        config = box.config
        box.config = dataclasses.replace(
            config, network=True, limits=dataclasses.replace(config.limits, memory_bytes=None)
        )
        argv = [obs.instruction if a == "{instruction}" else a for a in args["argv"]]
        done = await box.arun(argv, env=args["env"], timeout_s=args["timeout_s"], output_limit=1 << 20)
        verdict = await env.step(terminal_env.SubmitAction())
        return {
            "exit_code": None if done.timed_out else done.exit_code,
            "timed_out": done.timed_out,
            "stdout": done.stdout.decode(errors="replace"),
            "stderr": done.stderr.decode(errors="replace"),
            "reward": verdict.reward,
            "level": str(getattr(box.isolation, "value", box.isolation)),
            "breakdown": verdict.metadata.get("reward_breakdown"),
        }
    finally:
        await env.close()


if __name__ == "__main__":
    print(json.dumps(asyncio.run(_main(json.loads(sys.argv[1])))), flush=True)

"""Scoring a task that has an image of its own: its ``tests/test.sh`` in the session's
container, after the agent's turn, the reward read by the server.

1. The container is stopped and started again: no process of the agent survives.
2. ``/tests`` and ``/logs`` are removed (what the agent left there: a reward file
   written ahead, edited or extra tests, a link or a file in their place), and the
   engine is asked that they are gone; then the task's tests and an empty log dir
   are copied in through the engine's archive API (no program of the container's
   copies them). Where the engine cannot (the agent filled the session's disk), the
   reward is 0 and the breakdown says why.
3. ``bash /tests/test.sh`` runs from the working directory, with ``[verifier] env``,
   for at most ``[verifier] timeout_sec``; then the container is stopped, so nothing
   the tests started writes after the reward is read.
4. The server reads ``/logs/verifier/reward.json`` (a table of named numbers, reported
   as a breakdown; the reward is its ``reward`` entry, else their mean) or else
   ``reward.txt`` (one number) from the stopped container's files, through the engine.

What this does not cover: the tests run the container's own programs (``bash``,
``python3``, ``pytest``), which the agent could have replaced. Harbor's shared verifier
mode has the same limit; a task whose tests must not trust the image pins its tools.
"""

from __future__ import annotations

import asyncio
import io
import json
import math
import tarfile
from typing import Any

from ._container import ContainerBox
from ._tasks import TerminalTask
from ._verifier import Verdict

LOGS = "/logs/verifier"


def _tests_archive(task: TerminalTask) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name in ("logs", "logs/verifier"):
            info = tarfile.TarInfo(name)
            info.type, info.mode = tarfile.DIRTYPE, 0o777
            tar.addfile(info)
        tar.add(task.tests_dir, arcname="tests", filter=_owned_by_root)
    return buf.getvalue()


def _owned_by_root(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    if "__pycache__" in info.name.split("/"):
        return None
    info.uid = info.gid = 0
    info.uname = info.gname = "root"
    return info


def _exists(box: ContainerBox, path: str) -> bool:
    import docker.errors

    try:
        stream, _ = box.container.get_archive(path)
    except docker.errors.NotFound:
        return False
    for _ in stream:  # drain the response
        pass
    return True


def _read_logs(box: ContainerBox) -> dict[str, bytes]:
    """Regular files directly in ``/logs/verifier`` (no links), at most 1 MiB each."""
    import docker.errors

    try:
        stream, _ = box.container.get_archive(LOGS)
    except docker.errors.NotFound:
        return {}
    data = b"".join(stream)
    out: dict[str, bytes] = {}
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            if len(parts) == 2 and member.isreg() and member.size <= 1 << 20:
                f = tar.extractfile(member)
                if f is not None:
                    out[parts[1]] = f.read()
    return out


class RewardFileError(ValueError):
    """The verifier's reward file holds no usable reward."""


def parse_rewards(files: dict[str, bytes]) -> tuple[float, str, dict[str, float]]:
    """(reward, source, named rewards) from ``reward.json`` or ``reward.txt``."""
    if "reward.json" in files:
        raw = files["reward.json"].decode("utf-8", errors="replace")
        try:
            value = json.loads(raw)
        except ValueError:
            raise RewardFileError(f"reward.json is not JSON: {raw[:80]!r}") from None
        named = value if isinstance(value, dict) else {"reward": value}
        if not named:
            raise RewardFileError("reward.json is an empty table")
        for key, v in named.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                raise RewardFileError(f"reward.json: {key!r} is {v!r}, not a finite number")
        rewards = {str(k): float(v) for k, v in named.items()}
        reward = rewards["reward"] if "reward" in rewards else sum(rewards.values()) / len(rewards)
        return reward, "reward.json", rewards
    if "reward.txt" in files:
        raw = files["reward.txt"].decode("utf-8", errors="replace").strip()
        try:
            reward = float(raw)
        except ValueError:
            raise RewardFileError(f"reward.txt holds {raw[:80]!r}, not a number") from None
        if not math.isfinite(reward):
            raise RewardFileError(f"reward.txt holds {raw[:80]!r}, not a finite number")
        return reward, "reward.txt", {"reward": reward}
    raise RewardFileError(f"the tests wrote no {LOGS}/reward.txt or reward.json")


async def verify_in_container(box: ContainerBox, task: TerminalTask) -> Verdict:
    """Run the task's ``tests/test.sh`` in ``box`` after the agent's turn; see the module."""
    assert task.image is not None
    await asyncio.to_thread(box.kill)
    gone = await box.arun(["rm", "-rf", "--", "/tests", "/logs"], timeout_s=30)
    stale = [p for p in ("/tests", "/logs") if await asyncio.to_thread(_exists, box, p)]
    if stale or not gone.ok:
        await asyncio.to_thread(box.stop)
        why = f"could not clear {', '.join(stale) or '/tests'} before the verifier"
        return Verdict(reward=0.0, source="error", output=why, error=why)
    try:
        await asyncio.to_thread(box.container.put_archive, "/", _tests_archive(task))
    except Exception as exc:  # the engine's refusal: e.g. the agent filled the session's disk
        await asyncio.to_thread(box.stop)
        reason = " ".join(str(getattr(exc, "explanation", None) or exc).split())[-300:]
        full = "no space left on device" in reason.lower()
        why = "the session's disk is full: " if full else ""
        why += f"the verifier's tests could not be copied in ({reason})"
        return Verdict(reward=0.0, source="error", output=why, error=why)
    env = {
        "TESTS_DIR": "/tests",
        "LOGS_DIR": LOGS,
        "REWARD_FILE": f"{LOGS}/reward.txt",
        **task.image.verifier_env,
    }
    done = await box.arun(
        ["bash", "/tests/test.sh"],
        cwd=box.inner_workdir,
        env=env,
        timeout_s=task.verifier_timeout_s,
        output_limit=256 << 10,
    )
    await asyncio.to_thread(box.stop)  # nothing the tests started writes after this
    text = (done.stdout + done.stderr).decode("utf-8", errors="replace")[-8000:]
    base: dict[str, Any] = {"exit_code": done.exit_code, "timed_out": done.timed_out, "output": text}
    if done.timed_out:
        why = f"the verifier ran past its timeout_sec ({task.verifier_timeout_s:g} s)"
        return Verdict(reward=0.0, source="error", **base, error=why)
    try:
        reward, source, named = parse_rewards(await asyncio.to_thread(_read_logs, box))
    except RewardFileError as exc:
        return Verdict(reward=0.0, source="error", **base, error=str(exc))
    return Verdict(reward=reward, source=source, **base, rewards=named)

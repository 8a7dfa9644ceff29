"""The parts of a Harbor ``task.toml`` that say how a task with an image of its own runs.

Harbor (the Terminal-Bench 2 harness) reads these fields; this env honours the ones
that apply to one container per session::

    [agent]        timeout_sec
    [verifier]     timeout_sec, env = {NAME = "value"}
    [environment]  build_timeout_sec, docker_image, cpus, memory_mb, storage_mb,
                   workdir, network_mode ("no-network" / "public"), allow_internet
                   (the older spelling: true is "public"), env = {NAME = "value"};
                   memory = "2G" and storage = "10G" (older spellings) too
    [environment.healthcheck]  command, interval_sec, timeout_sec, start_period_sec,
                   start_interval_sec, retries: run in the container until it passes
                   before a session starts (_compose_health.wait_task_ready)

``environment/docker-compose.yaml`` (services beside the task's container) is read by
_compose.py.

One difference from Harbor: a task gets no network unless it asks for it
(``network_mode = "public"`` or ``allow_internet = true``); Harbor's default is public.
Fields it has that do not apply here (GPUs, TPUs, MCP servers, multi-step tasks) are
ignored; ``network_mode = "allowlist"``, a separate verifier environment
(``[verifier] environment_mode = "separate"`` or a ``[verifier.environment]`` table) and
an ``os`` other than ``"linux"`` are refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._compose import ComposeSpec


class TaskFormatError(ValueError):
    """A ``task.toml`` field has the wrong type or value."""


def _size_mb(value: Any, name: str) -> int:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        text = value.strip().upper()
        units = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}
        if text[-1:] in units:
            try:
                return int(float(text[:-1]) * units[text[-1]])
            except ValueError:
                pass
    raise TaskFormatError(f"[environment] {name} = {value!r}: expected a size like '2G' or '512M'")


def _number(table: dict[str, Any], key: str, where: str, default: float | None) -> float | None:
    value = table.get(key, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise TaskFormatError(f"[{where}] {key} = {value!r}: expected a positive number")
    return float(value)


def _env_table(table: dict[str, Any], where: str) -> dict[str, str]:
    env = table.get("env", {})
    if not isinstance(env, dict) or not all(isinstance(v, (str, int, float)) for v in env.values()):
        raise TaskFormatError(f'[{where}] env: expected a table of NAME = "value"')
    return {str(k): str(v) for k, v in env.items()}


def _verifier_shared(verifier: dict[str, Any]) -> None:
    """Refuse a verifier container of its own (Harbor's ``environment_mode = "separate"``,
    implied by a ``[verifier.environment]`` table; ``harbor task init``'s default): the
    tests here run in the agent's container, which such a task's tests do not expect."""
    mode = verifier.get("environment_mode")
    if mode not in (None, "shared", "separate"):
        raise TaskFormatError(f"[verifier] environment_mode = {mode!r}: expected 'shared' or 'separate'")
    if mode == "separate" or (mode is None and "environment" in verifier):
        raise TaskFormatError(
            "[verifier] environment_mode = 'separate' (a verifier container of its own) is not run "
            "here: this env runs tests/test.sh in the agent's container ('shared'; `harbor task init "
            "--verifier-mode shared` writes such a task)"
        )


@dataclass(frozen=True, slots=True)
class TaskHealthcheck:
    """``[environment.healthcheck]``: a shell command run in the task's container after
    its start until it exits 0, as Harbor does before the agent's turn (its defaults)."""

    command: str
    interval_s: float = 5.0
    timeout_s: float = 30.0
    start_period_s: float = 0.0
    start_interval_s: float = 5.0
    retries: int = 3

    @classmethod
    def from_toml(cls, table: Any) -> TaskHealthcheck:
        where = "environment.healthcheck"
        if not isinstance(table, dict):
            raise TaskFormatError(f"[{where}] must be a table")
        unknown = set(table) - {"command", *_HEALTH_SECONDS, "retries"}
        if unknown:
            raise TaskFormatError(f"[{where}] {', '.join(sorted(unknown))}: not a healthcheck field")
        command, retries = table.get("command"), table.get("retries", 3)
        if not isinstance(command, str) or not command.strip():
            raise TaskFormatError(f"[{where}] command = {command!r}: expected a shell command")
        if isinstance(retries, bool) or not isinstance(retries, int) or retries < 1:
            raise TaskFormatError(f"[{where}] retries = {retries!r}: expected a whole number of at least 1")
        seconds = {key: _seconds(table, key, where) for key in _HEALTH_SECONDS if key in table}
        return cls(command, retries=retries, **{_HEALTH_SECONDS[k]: v for k, v in seconds.items()})


#: ``[environment.healthcheck]``'s durations and their fields here.
_HEALTH_SECONDS = {
    "interval_sec": "interval_s",
    "timeout_sec": "timeout_s",
    "start_period_sec": "start_period_s",
    "start_interval_sec": "start_interval_s",
}


def _seconds(table: dict[str, Any], key: str, where: str) -> float:
    value = table[key]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise TaskFormatError(f"[{where}] {key} = {value!r}: expected a number of seconds")
    return float(value)


@dataclass(frozen=True, slots=True)
class ImageSettings:
    """How a task's container is built and run (from ``task.toml``)."""

    build_timeout_s: float = 600.0
    docker_image: str | None = None
    cpus: float | None = None
    memory_mb: int | None = None
    storage_mb: int | None = None
    workdir: str | None = None
    network: bool = False
    env: dict[str, str] = field(default_factory=dict)
    verifier_env: dict[str, str] = field(default_factory=dict)
    compose: ComposeSpec | None = None  # environment/docker-compose.yaml (_compose.py)
    healthcheck: TaskHealthcheck | None = None

    @classmethod
    def from_toml(cls, meta: dict[str, Any]) -> ImageSettings:
        env = meta.get("environment", {})
        verifier = meta.get("verifier", {})
        if not isinstance(env, dict) or not isinstance(verifier, dict):
            raise TaskFormatError("[environment] and [verifier] must be tables")
        mode = env.get("network_mode")
        if mode not in (None, "no-network", "public"):
            raise TaskFormatError(
                f"[environment] network_mode = {mode!r}: this env runs 'no-network' or 'public' only"
            )
        _verifier_shared(verifier)
        if env.get("os", "linux") != "linux":
            raise TaskFormatError(f"[environment] os = {env['os']!r}: this env runs Linux containers only")
        allow = env.get("allow_internet")
        if allow is not None and not isinstance(allow, bool):
            raise TaskFormatError(f"[environment] allow_internet = {allow!r}: expected true or false")
        memory = env.get("memory_mb", env.get("memory"))
        storage = env.get("storage_mb", env.get("storage"))
        image = env.get("docker_image")
        workdir = env.get("workdir")
        if image is not None and not isinstance(image, str):
            raise TaskFormatError(f"[environment] docker_image = {image!r}: expected a string")
        if workdir is not None and not (isinstance(workdir, str) and workdir.startswith("/")):
            raise TaskFormatError(f"[environment] workdir = {workdir!r}: expected an absolute path")
        return cls(
            build_timeout_s=_number(env, "build_timeout_sec", "environment", 600.0) or 600.0,
            docker_image=image,
            cpus=_number(env, "cpus", "environment", None),
            memory_mb=None if memory is None else _size_mb(memory, "memory_mb"),
            storage_mb=None if storage is None else _size_mb(storage, "storage_mb"),
            workdir=workdir,
            network=mode == "public" or allow is True,
            env=_env_table(env, "environment"),
            verifier_env=_env_table(verifier, "verifier"),
            healthcheck=TaskHealthcheck.from_toml(env["healthcheck"]) if "healthcheck" in env else None,
        )

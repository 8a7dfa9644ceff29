"""Real agent CLIs run in a sandbox, their model calls captured.

An ``AgentCLI`` says how to start one agent on a task (its command line and the
environment that points it at a model API); ``run_agent`` starts it in a ``Sandbox``
(a terminal env session's, say) whose only way out is its capture session's endpoint:
the proxy's model routes on a unix socket (``CaptureServer.open_endpoint``),
bind-mounted in read-only and relayed to ``127.0.0.1:PORT`` inside by a small
standard-library relay (``_relay_main.py``). The sandbox keeps no network, so the agent
reaches that one session and nothing else: not the host, not the env server, not
another session (the endpoint answers model routes only, as its own session).
The env's tools, when the harness offers some (``tools_url``: a ``HarnessMCPBridge``),
come in the same way: a second socket, relayed to ``127.0.0.1:TOOLS_PORT`` inside, and
the agent's MCP configuration names ``http://127.0.0.1:TOOLS_PORT/mcp`` as server ``env``.

Agents are installed under ``agents_dir()`` (``OPENENV_AGENTS_DIR``; by default
``/opt/openenv/agents`` as root, else ``~/.cache/openenv/agents``; the sandbox's uid
must be able to read it) by ``install``:
mini-swe-agent from PyPI into a venv of the system Python (``_mini_install``: pinned, and
only what its OpenAI-compatible path imports), the others from npm.
Each is bound into the sandbox read-only at its own path.
"""

from __future__ import annotations

import contextlib
import json
import os
import platform
import shutil
import subprocess
import time
from collections.abc import AsyncIterator, Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TypedDict, Unpack
from urllib.parse import urlsplit

from .._exceptions import SandboxUnavailable, ValidationFailed
from ._forward import forward_to_loopback, loopback_address
from ._mini_install import mini_install_argv

__all__ = [
    "AGENTS",
    "DEFAULT_MODEL",
    "DEFAULT_TIMEOUT_S",
    "PORT",
    "TOOLS_PORT",
    "AgentCLI",
    "AgentOptions",
    "AgentRun",
    "agents_dir",
    "install",
    "run_agent",
    "run_with_endpoint",
]

_RELAY = Path(__file__).with_name("_relay_main.py")
_INNER_SOCKET_DIR = "/run/openenv"  # the socket and a copy of the relay, read-only
_INNER_RELAY = f"{_INNER_SOCKET_DIR}/relay.py"
#: The loopback port the agent's API base URL names, inside the sandbox.
PORT = 8000
#: The loopback port of the env's MCP tools inside the sandbox (when the harness has some).
TOOLS_PORT = 8001
#: The MCP server name the env's tools are configured under (Claude Code: ``mcp__env__TOOL``).
MCP_SERVER = "env"
_HOME = "/tmp/home"  # the agent's $HOME: in the sandbox's private /tmp


def agents_dir() -> Path:
    """Where agents are installed: ``OPENENV_AGENTS_DIR``, else ``/opt/openenv/agents`` as
    root (each sandbox runs as its own uid, which cannot enter ``/root``), else
    ``~/.cache/openenv/agents``."""
    if os.environ.get("OPENENV_AGENTS_DIR"):
        return Path(os.environ["OPENENV_AGENTS_DIR"]).absolute()
    return Path("/opt/openenv/agents") if os.geteuid() == 0 else Path.home() / ".cache" / "openenv" / "agents"


@dataclass(frozen=True)
class AgentCLI:
    """One agent program: where it is installed, how to start it, how to install it.

    ``argv(instruction, model)`` is its command line; ``env(base_url, key, model)`` the
    variables that point it at the model API (``base_url`` is the API root, no ``/v1``).
    """

    name: str
    folder: str  # under agents_dir()
    program: str  # the executable, relative to the folder
    argv: Callable[[Path, str, str], list[str]]
    env: Callable[[str, str, str], dict[str, str]]
    install_argv: Callable[[Path], list[list[str]]]
    dialect: str
    needs: tuple[str, ...] = ()
    #: Its runtime reserves more address space than the sandbox's per-process limit
    #: (Bun's JIT: Claude Code dies at 2 GiB); run with that limit lifted, memory
    #: still bounded by the session's cgroup (refused where there is none).
    lift_address_space: bool = False
    #: Added to the command line to go on with the last conversation (none: each run is new).
    resume_args: tuple[str, ...] = ()
    #: Added to the command line to give it the env's tools at an MCP URL (None: it takes none).
    mcp_args: Callable[[str], list[str]] | None = None
    #: ``program`` is a Node.js script (a terminal env image has no Node.js) ...
    node: bool = False
    #: ... and this one, under the folder, the native program it starts ("": none).
    native: str = ""

    def home(self, root: Path | None = None) -> Path:
        return (root or agents_dir()) / self.folder

    def executable(self, root: Path | None = None) -> Path:
        return self.home(root) / self.program

    def missing(self, root: Path | None = None) -> str:
        """Why this agent cannot run here ("" when it can)."""
        for tool in self.needs:
            if shutil.which(tool) is None:
                return f"{self.name} needs {tool}, not found"
        if not os.access(self.executable(root), os.X_OK):
            return (
                f"{self.name} is not installed in {self.home(root)} (openenv.harness.install({self.name!r}))"
            )
        return ""


def _codex_native() -> str:
    """Where npm puts Codex CLI's native (static musl) build for this machine."""
    arch = {"aarch64": ("arm64", "aarch64"), "arm64": ("arm64", "aarch64")}.get(
        platform.machine(), ("x64", "x86_64")
    )
    return f"node_modules/@openai/codex-linux-{arch[0]}/vendor/{arch[1]}-unknown-linux-musl/bin/codex"


def _mini_argv(exe: Path, instruction: str, model: str) -> list[str]:
    return [
        str(exe), "--yolo", "--exit-immediately", "--task", instruction,
        "--model", f"openai/{model}", "--output", f"{_HOME}/mini.traj.json",
        "-c", "mini.yaml", "-c", "model.cost_tracking=ignore_errors",
        "-c", f"model.model_kwargs.api_base=http://127.0.0.1:{PORT}/v1",
    ]  # fmt: skip


def _mini_env(base_url: str, key: str, model: str) -> dict[str, str]:
    return {
        "OPENAI_API_KEY": key, "OPENAI_BASE_URL": f"{base_url}/v1", "MSWEA_CONFIGURED": "true",
        "MSWEA_SILENT_STARTUP": "1", "MSWEA_COST_TRACKING": "ignore_errors",
        "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_TELEMETRY": "False",
        "MSWEA_GLOBAL_CONFIG_DIR": f"{_HOME}/.config/mini-swe-agent",
    }  # fmt: skip


def _claude_argv(exe: Path, instruction: str, model: str) -> list[str]:
    return [
        str(exe), "-p", instruction, "--model", model, "--output-format", "json",
        "--dangerously-skip-permissions", "--max-turns", "8",
    ]  # fmt: skip


def _claude_env(base_url: str, key: str, model: str) -> dict[str, str]:
    return {
        "ANTHROPIC_BASE_URL": base_url, "ANTHROPIC_API_KEY": key,
        "ANTHROPIC_SMALL_FAST_MODEL": model, "ANTHROPIC_DEFAULT_HAIKU_MODEL": model,
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1",
        "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1",
        "CLAUDE_CONFIG_DIR": f"{_HOME}/.claude",
        "MCP_CONNECT_TIMEOUT_MS": "30000",  # that wait's bound (5 s by default): its connect timeout's
    }  # fmt: skip


def _claude_mcp(url: str) -> list[str]:
    # alwaysLoad: its first model call waits for the server's tools (by default a headless
    # run connects in the background, and on a loaded machine asked the model without them)
    config = {"mcpServers": {MCP_SERVER: {"type": "http", "url": url, "alwaysLoad": True}}}
    return ["--mcp-config", json.dumps(config), "--strict-mcp-config"]


def _codex_mcp(url: str) -> list[str]:
    server = f"mcp_servers.{MCP_SERVER}"  # its start waited on up to 30 s (10 by default), as Claude Code's
    return ["-c", f"{server}.url={json.dumps(url)}", "-c", f"{server}.startup_timeout_sec=30"]


def _codex_argv(exe: Path, instruction: str, model: str) -> list[str]:
    provider = {
        "name": "openenv-capture",
        "base_url": f"http://127.0.0.1:{PORT}/v1",
        "env_key": "OPENAI_API_KEY",
        "wire_api": "responses",
    }
    config = [f"model_providers.openenv.{k}={json.dumps(v)}" for k, v in provider.items()]
    return [
        str(exe), "exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
        "-m", model, "-c", 'model_provider="openenv"', *(a for c in config for a in ("-c", c)), instruction,
    ]  # fmt: skip


def _codex_env(base_url: str, key: str, model: str) -> dict[str, str]:
    return {"OPENAI_API_KEY": key, "RUST_LOG": "error"}


def _opencode_argv(exe: Path, instruction: str, model: str) -> list[str]:
    return [str(exe), "run", "--auto", "-m", f"openenv/{model}", instruction]


def _opencode_env(base_url: str, key: str, model: str) -> dict[str, str]:
    provider = {
        "npm": "@ai-sdk/openai-compatible",
        "name": "openenv capture",
        "options": {"baseURL": f"{base_url}/v1", "apiKey": key},
        "models": {model: {"name": model}},
    }
    config = {
        "provider": {"openenv": provider},
        "model": f"openenv/{model}",
        "share": "disabled",
        "autoupdate": False,
    }
    return {"OPENCODE_CONFIG_CONTENT": json.dumps(config), "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1"}  # fmt: skip


_GEMINI_SETTINGS = json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})


def _gemini_argv(exe: Path, instruction: str, model: str) -> list[str]:
    # API-key auth must be chosen in its settings; $HOME is fresh each run
    settings = f"echo '{_GEMINI_SETTINGS}' > \"$HOME/.gemini/settings.json\""
    setup = f'mkdir -p "$HOME/.gemini" && {settings} && exec "$@"'
    return [
        "/bin/sh",
        "-c",
        setup,
        "sh",
        str(exe),
        "--yolo",
        "--output-format",
        "json",
        "-m",
        model,
        "-p",
        instruction,
    ]


def _gemini_env(base_url: str, key: str, model: str) -> dict[str, str]:
    return {
        "GEMINI_API_KEY": key, "GOOGLE_GEMINI_BASE_URL": base_url, "GEMINI_CLI_NO_RELAUNCH": "true",
        "GEMINI_DEFAULT_AUTH_TYPE": "gemini-api-key", "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }  # fmt: skip


def _npm(package: str) -> Callable[[Path], list[list[str]]]:
    """The install commands of an agent CLI from the npm registry, into its own folder."""
    return lambda home: [["npm", "install", "--prefix", str(home), "--no-audit", "--no-fund", package]]


def _npm_agent(
    name: str,
    package: str,
    command: str,
    dialect: str,
    *,
    argv: Callable[[Path, str, str], list[str]],
    env: Callable[[str, str, str], dict[str, str]],
    **kw: Any,
) -> AgentCLI:
    """An agent CLI from the npm registry: in its own folder, started by its ``.bin`` script."""
    return AgentCLI(
        name=name,
        folder=name,
        program=f"node_modules/.bin/{command}",
        argv=argv,
        env=env,
        install_argv=_npm(package),
        dialect=dialect,
        needs=("npm",),
        **kw,
    )


AGENTS: dict[str, AgentCLI] = {
    "mini-swe-agent": AgentCLI(
        name="mini-swe-agent",
        folder="mini-swe-agent",
        program="bin/mini",
        argv=_mini_argv,
        env=_mini_env,
        install_argv=mini_install_argv,  # only what its OpenAI-compatible path imports
        dialect="openai_chat",
        needs=("/usr/bin/python3",),
    ),
    "codex": _npm_agent(
        "codex", "@openai/codex", "codex", "openai_responses", argv=_codex_argv, env=_codex_env,
        mcp_args=_codex_mcp, node=True, native=_codex_native(),
    ),
    "opencode": _npm_agent(
        "opencode", "opencode-ai", "opencode", "openai_chat", argv=_opencode_argv, env=_opencode_env,
        lift_address_space=True, resume_args=("--continue",),  # Bun, as Claude Code
    ),
    "gemini-cli": _npm_agent(
        "gemini-cli", "@google/gemini-cli", "gemini", "google", argv=_gemini_argv, env=_gemini_env,
        node=True, lift_address_space=True,  # Node's WebAssembly reserves its memory up front
    ),
    "claude-code": _npm_agent(
        "claude-code", "@anthropic-ai/claude-code", "claude", "anthropic", argv=_claude_argv,
        env=_claude_env, lift_address_space=True, resume_args=("--continue",), mcp_args=_claude_mcp,
    ),
}  # fmt: skip


def _agent(name: str) -> AgentCLI:
    try:
        return AGENTS[name]
    except KeyError:
        raise ValidationFailed(f"no agent {name!r}: choose one of {', '.join(AGENTS)}") from None


def install(name: str, root: Path | None = None) -> float:
    """Install agent ``name`` under ``root`` (default ``agents_dir()``) unless it is there;
    returns the seconds it took (0 when already installed). Needs the registry (PyPI or npm)."""
    agent = _agent(name)
    if not agent.missing(root):
        return 0.0
    home = agent.home(root)
    start = time.monotonic()
    if home.exists():
        shutil.rmtree(home)
    home.parent.mkdir(parents=True, exist_ok=True)
    for argv in agent.install_argv(home):
        done = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
        if done.returncode != 0:
            shutil.rmtree(home, ignore_errors=True)
            raise ValidationFailed(f"installing {name} failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return time.monotonic() - start


@contextlib.contextmanager
def _address_space(box: Any, name: str, lift: bool) -> Iterator[None]:
    """The box's per-process address-space limit lifted for the agent's start, if ``lift``."""
    if not lift or box.config.limits.memory_bytes is None:
        yield
        return
    cgroup = box.describe().get("session_limits") or {}
    if not (cgroup.get("enforced") and cgroup.get("memory_bytes")):
        raise SandboxUnavailable(
            f"{name} needs more than the {box.config.limits.memory_bytes >> 20} MiB address space of a "
            "sandboxed process; it runs only where the session's memory is bounded by a cgroup instead"
        )
    config = box.config
    box.config = replace(config, limits=replace(config.limits, memory_bytes=None))
    try:
        yield
    finally:
        box.config = config


#: An agent run's model name and time limit unless its ``AgentOptions`` say otherwise.
DEFAULT_MODEL, DEFAULT_TIMEOUT_S = "scripted", 300.0


class AgentOptions(TypedDict, total=False):
    """How one agent run goes, wherever it runs (``run_agent`` in a sandbox,
    ``run_agent_in_image`` in a container, ``CLIAgentAdapter`` per turn): each key optional.

    ``model``: the model name the agent asks for (``DEFAULT_MODEL``); ``timeout_s``: the
    run's wall clock, its processes killed past it (``DEFAULT_TIMEOUT_S``); ``root``: where
    the agents are installed (``agents_dir()``); ``extra_env``: more variables for the agent;
    ``tools_url``: the env's tools as an MCP server on a host loopback port (a
    ``HarnessMCPBridge``'s URL), given to the agent as MCP server ``env`` (its ``mcp_args``).
    """

    model: str
    timeout_s: float
    root: Path | None
    extra_env: Mapping[str, str] | None
    tools_url: str | None


@dataclass
class AgentRun:
    """What one agent run did: its exit, its output, the model calls it made."""

    agent: str
    exit_code: int | None
    stdout: str
    stderr: str
    timed_out: bool
    duration_s: float
    calls: int  # model calls the agent sent to its endpoint
    refused: list[str] = field(default_factory=list)  # requests the endpoint refused

    def to_plain(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}


@contextlib.asynccontextmanager
async def ways_out(folder: Path, capture: Any, session_id: str, tools_url: str | None) -> AsyncIterator[Any]:
    """Fill ``folder`` (bound in at ``/run/openenv``) with a run's ways out, for the block:
    a copy of the relay, capture session ``session_id``'s endpoint socket ``model.sock``,
    and with ``tools_url`` a socket ``tools.sock`` piped to that loopback port. Yields the
    endpoint (its ``counts``: the model calls made, the requests refused).

    Raises:
        ValidationFailed: ``tools_url`` is not an http URL on loopback (nothing opened).
    """
    if tools_url is not None:
        loopback_address(tools_url)
    # a copy the sandbox's uid can read wherever this package lies (a venv under /root...)
    (folder / "relay.py").write_bytes(_RELAY.read_bytes())
    (folder / "relay.py").chmod(0o644)
    endpoint = capture.open_endpoint(session_id, str(folder / "model.sock"))
    try:
        async with contextlib.AsyncExitStack() as stack:
            if tools_url is not None:
                await stack.enter_async_context(forward_to_loopback(str(folder / "tools.sock"), tools_url))
            yield endpoint
    finally:
        endpoint.close()


def relayed(argv: list[str], tools: bool) -> list[str]:
    """``argv`` started by the relay in ``/run/openenv`` (``ways_out``): ``127.0.0.1:PORT``
    to the endpoint socket, with ``tools`` also ``127.0.0.1:TOOLS_PORT`` to the tools
    socket; ``$HOME`` (``/tmp/home``) made first."""
    pairs = [f"{_INNER_SOCKET_DIR}/model.sock", str(PORT)]
    if tools:
        pairs += [f"{_INNER_SOCKET_DIR}/tools.sock", str(TOOLS_PORT)]
    return [
        "/bin/sh", "-c", f'mkdir -p {_HOME} && exec "$@"', "sh",
        "/usr/bin/python3", "-I", _INNER_RELAY, *pairs, "--", *argv,
    ]  # fmt: skip


async def run_with_endpoint(
    box: Any,
    argv: list[str],
    capture: Any,
    session_id: str,
    *,
    env: Mapping[str, str] | None = None,
    ro_binds: Mapping[str, str] | None = None,
    timeout_s: float = DEFAULT_TIMEOUT_S,
    label: str = "",
    lift_address_space: bool = False,
    tools_url: str | None = None,
) -> AgentRun:
    """Run ``argv`` in sandbox ``box`` (an ``openenv.sandbox.Sandbox`` under bubblewrap)
    with one way out: ``http://127.0.0.1:PORT`` inside is capture session ``session_id``
    of the running ``capture`` (a ``CaptureServer``), its model routes only; with
    ``tools_url`` (an MCP server on a host loopback port: a ``HarnessMCPBridge``'s URL)
    also ``127.0.0.1:TOOLS_PORT``, which reaches that port and nothing else. ``$HOME`` is
    a fresh ``/tmp/home``. Returns when ``argv`` exits or after ``timeout_s`` (then its
    processes are killed).

    Raises:
        SandboxUnavailable: the sandbox is not under bubblewrap (it would keep the host's
            network), or the address space cannot be lifted safely.
        ValidationFailed: ``tools_url`` is not an http URL on loopback.
    """
    level = str(getattr(box.isolation, "value", box.isolation))
    if level != "bwrap":  # openenv.sandbox.Isolation.BWRAP (the box is the caller's)
        raise SandboxUnavailable(
            f"agents run only under bubblewrap (no network but their endpoint), not at level {level}"
        )
    sock_dir = Path(box.root) / "endpoint"
    sock_dir.mkdir(mode=0o755, exist_ok=True)
    async with ways_out(sock_dir, capture, session_id, tools_url) as endpoint:
        start = time.monotonic()
        with _address_space(box, label or argv[0], lift_address_space):
            done = await box.arun(
                relayed(argv, tools_url is not None),
                env={"HOME": _HOME, **(env or {})},
                ro_binds={**(ro_binds or {}), _INNER_SOCKET_DIR: str(sock_dir)},
                timeout_s=timeout_s,
                output_limit=1 << 20,
            )
    return AgentRun(
        agent=label or argv[0],
        exit_code=None if done.timed_out else done.exit_code,
        stdout=done.stdout.decode(errors="replace"),
        stderr=done.stderr.decode(errors="replace"),
        timed_out=done.timed_out,
        duration_s=time.monotonic() - start,
        calls=endpoint.counts.calls,
        refused=list(endpoint.counts.refused),
    )


@dataclass(frozen=True)
class Launch:
    """How to start one agent run: its command line, its environment, its read-only binds,
    its time limit, its tools' URL (``runner_args``: what ``run_with_endpoint`` and
    ``run_in_image`` take of them by keyword)."""

    agent: AgentCLI
    argv: list[str]
    env: dict[str, str]
    ro_binds: dict[str, str]
    timeout_s: float = DEFAULT_TIMEOUT_S
    tools_url: str | None = None

    def runner_args(self) -> dict[str, Any]:
        return {
            "env": self.env, "ro_binds": self.ro_binds, "timeout_s": self.timeout_s, "label": self.agent.name,
            "tools_url": self.tools_url,
        }  # fmt: skip


def launch(
    name: str,
    instruction: str,
    session_id: str,
    *,
    resume: bool = False,
    native: bool = False,
    **options: Unpack[AgentOptions],
) -> Launch:
    """Agent ``name``'s run on ``instruction``, its API at ``http://127.0.0.1:PORT`` with key
    ``session_id``; ``resume``: its ``resume_args``; ``native``: started without Node.js
    (its ``native`` program where it has one); ``options`` as ``AgentOptions`` says
    (``timeout_s`` is the runner's).

    Raises:
        TypeError: an option ``AgentOptions`` has not.
        ValidationFailed: an unknown or uninstalled agent, one that needs Node.js when
            ``native``, a resume or tools for one that cannot take them.
    """
    unknown = sorted(set(options) - AgentOptions.__optional_keys__)
    if unknown:  # what a keyword parameter would refuse
        known = ", ".join(sorted(AgentOptions.__optional_keys__))
        raise TypeError(f"unknown agent run option {unknown[0]!r}: use {known}")
    model, root = options.get("model", DEFAULT_MODEL), options.get("root")
    extra_env, tools_url = options.get("extra_env"), options.get("tools_url")
    agent = _agent(name)
    why = agent.missing(root)
    if why:
        raise ValidationFailed(why)
    exe = agent.executable(root)
    if native and agent.node:
        if not agent.native:
            raise ValidationFailed(f"{name} starts through Node.js, which a terminal env image has not")
        exe = agent.home(root) / agent.native
    if resume and not agent.resume_args:
        raise ValidationFailed(f"{name} cannot go on with a conversation: each run is a new one")
    if tools_url is not None and agent.mcp_args is None:
        raise ValidationFailed(f"{name} is not given env tools over MCP here")
    mcp = [] if tools_url is None or agent.mcp_args is None else agent.mcp_args(_inner_tools_url(tools_url))
    env = {
        **agent.env(f"http://127.0.0.1:{PORT}", session_id, model),
        "NO_PROXY": "127.0.0.1,localhost", **(extra_env or {}),
    }  # fmt: skip
    home = str(agent.home(root))
    argv = [*agent.argv(exe, instruction, model), *mcp, *(agent.resume_args if resume else ())]
    timeout_s = options.get("timeout_s", DEFAULT_TIMEOUT_S)
    return Launch(agent, argv, env, {home: home}, timeout_s, tools_url)


async def run_agent(
    box: Any,
    name: str,
    instruction: str,
    capture: Any,
    session_id: str,
    *,
    resume: bool = False,
    **options: Unpack[AgentOptions],
) -> AgentRun:
    """Run agent ``name`` on ``instruction`` in ``box``, its model calls going to capture
    session ``session_id`` of ``capture`` and nowhere else (``run_with_endpoint``);
    ``resume``: go on with the agent's last conversation in this sandbox (its
    ``resume_args``; ``ValidationFailed`` without); ``options`` (``model``, ``timeout_s``,
    ``root``, ``extra_env``, ``tools_url``) as ``AgentOptions`` says, the same as
    ``run_agent_in_image``'s.

    Raises:
        ValidationFailed: an unknown or uninstalled agent, or tools for one that takes none.
        SandboxUnavailable: as ``run_with_endpoint``.
    """
    run = launch(name, instruction, session_id, resume=resume, **options)
    lift = run.agent.lift_address_space
    return await run_with_endpoint(
        box, run.argv, capture, session_id, lift_address_space=lift, **run.runner_args()
    )


def _inner_tools_url(url: str) -> str:
    """The tools' URL as the agent sees it in its sandbox: the same path on ``TOOLS_PORT``."""
    return f"http://127.0.0.1:{TOOLS_PORT}{urlsplit(url).path or '/'}"

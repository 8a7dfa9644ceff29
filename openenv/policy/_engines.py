"""``openenv policy serve --engine vllm|sglang``: start a third-party server instead of ours.

The command line each engine gets is a pure function (:func:`engine_argv`), so it is
tested without the engine installed. vLLM answers token ids and logprobs per request
(``return_token_ids``, ``logprobs``) with no server flag, as our server does.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from collections.abc import Sequence

from .._exceptions import PolicyError

ENGINES = ("local", "vllm", "sglang")

# engine -> (importable module, what to install)
_PACKAGES = {"vllm": ("vllm", "vllm"), "sglang": ("sglang", "'sglang[all]'")}


def engine_argv(
    engine: str,
    checkpoint: str,
    *,
    host: str,
    port: int,
    model_name: str | None = None,
    api_key: str | None = None,
    python: str | None = None,
) -> list[str]:
    """The argv that starts ``engine`` serving ``checkpoint`` on ``host:port``."""
    exe = python or sys.executable
    if engine == "vllm":
        argv = [exe, "-m", "vllm.entrypoints.openai.api_server", "--model", checkpoint]
    elif engine == "sglang":
        argv = [exe, "-m", "sglang.launch_server", "--model-path", checkpoint]
    else:
        raise ValueError(f"unknown engine {engine!r} (choose from {', '.join(ENGINES[1:])})")
    argv += ["--host", host, "--port", str(port)]
    if model_name:
        argv += ["--served-model-name", model_name]
    if api_key:
        argv += ["--api-key", api_key]
    return argv


def require_engine(engine: str) -> None:
    """Raise :class:`PolicyError` (one line) when ``engine``'s package is not importable."""
    module, install = _PACKAGES[engine]
    if importlib.util.find_spec(module) is None:
        raise PolicyError(f"--engine {engine} needs {module} installed: pip install {install}")


def exec_engine(engine: str, argv: Sequence[str]) -> None:
    """Check the engine is importable, then replace this process with it."""
    require_engine(engine)
    print(f"openenv: starting {engine}: {' '.join(argv)}", file=sys.stderr, flush=True)
    os.execv(argv[0], list(argv))

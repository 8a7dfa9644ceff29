"""Installing an env's package from its Hugging Face Space, with the user's consent."""

from __future__ import annotations

import os
import re
import sys

TRUST_VAR = "OPENENV_TRUST_REMOTE_CODE"
_YES = frozenset({"1", "true", "yes", "y", "on"})
# ``Successfully installed a-1.0 openenv-wordle_env-0.1.0`` -> ``openenv-wordle_env``
_INSTALLED = re.compile(r"^(openenv-.+?)(?:-\d[\w.+!]*)?$")
# uv pip: `` + openenv-wordle-env==0.1.0``
_UV_INSTALLED = re.compile(r"^\s*\+\s*(openenv-[^=\s]+)==")


def trusted_by_environment() -> bool:
    """Whether ``OPENENV_TRUST_REMOTE_CODE`` is set true: consent given once for all."""
    return os.environ.get(TRUST_VAR, "").strip().lower() in _YES


def _confirm_remote_install(repo_id: str) -> bool:
    """Whether installing (and so running) the code of Space ``repo_id`` is allowed:
    yes when ``OPENENV_TRUST_REMOTE_CODE`` is set true, else asked on a terminal;
    never without one."""
    if trusted_by_environment():
        return True
    if not sys.stdin.isatty():
        return False
    print(f"Installing env {repo_id!r} from the Hugging Face Hub runs its code on this machine.")
    try:
        answer = input(f"Install it? (set {TRUST_VAR}=1 to skip this question) [y/N]: ")
    except (EOFError, KeyboardInterrupt):
        return False
    return answer.strip().lower() in ("y", "yes")


def installed_package(pip_output: str) -> str | None:
    """The ``openenv-*`` package a pip / uv pip install reports having installed."""
    for line in pip_output.splitlines():
        uv_line = _UV_INSTALLED.match(line)
        if uv_line:
            return uv_line.group(1)
        if "Successfully installed" not in line:
            continue
        for word in line.split("Successfully installed", 1)[1].split():
            found = _INSTALLED.match(word)
            if found:
                return found.group(1)
    return None

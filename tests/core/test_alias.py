"""``openenv_core``: the deprecated name of ``openenv.core``, the same modules under it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error::DeprecationWarning:__main__", "-c", code],
        capture_output=True, text=True, cwd=REPO, timeout=60, check=False,
    )


def test_import_warns() -> None:
    done = run("import openenv_core")
    assert done.returncode != 0
    assert "DeprecationWarning: openenv_core is deprecated: import openenv.core" in done.stderr


def test_submodules_are_the_same_modules() -> None:
    done = run(
        "import warnings; warnings.simplefilter('ignore')\n"
        "import sys, openenv.core.env_server.types as new\n"
        "from openenv_core.env_server.types import State\n"
        "from openenv_core.client_types import StepResult\n"
        "from openenv_core.env_client import EnvClient\n"
        "import openenv.core as core, openenv_core\n"
        "assert State is new.State\n"
        "assert StepResult is core.StepResult and EnvClient is core.EnvClient\n"
        "assert openenv_core.GenericEnvClient is core.GenericEnvClient\n"
        "assert sys.modules['openenv_core.env_server.types'] is new\n"
        "print('ok')\n"
    )
    assert done.stdout.strip() == "ok", done.stderr


def test_unknown_submodule_is_not_found() -> None:
    done = run(
        "import warnings; warnings.simplefilter('ignore')\n"
        "import openenv_core\n"
        "try:\n    import openenv_core.nope\nexcept ModuleNotFoundError as e:\n    print(e.name)\n"
    )
    assert done.stdout.strip() == "openenv_core.nope", done.stderr

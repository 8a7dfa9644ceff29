"""How mini-swe-agent is installed: only what its OpenAI-compatible path runs on.

``pip install mini-swe-agent`` brings about 750 MB (``datasets`` with pyarrow, pandas
and numpy; ``textual``; litellm's ``tokenizers`` and ``huggingface_hub``) that a run
against an OpenAI-compatible endpoint never imports. Here the venv gets mini-swe-agent,
litellm and exactly the distributions that ``mini --yolo --exit-immediately`` with
litellm's ``openai/`` provider imports, pinned and without dependency resolution
(``--no-deps``), from the caller's pip (``pip --python``) into a venv made without pip,
and no byte-code compiled at install; one import of that path then compiles what the
runs use (the sandbox binds the venv read-only, so it could not be written there).
About 210 MB. The pins are a set that ran together (tests/harness/test_agents.py);
change them together.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

__all__ = ["MINI_SWE_AGENT_PINS", "mini_install_argv"]

MINI_SWE_AGENT_PINS = (
    "mini-swe-agent==2.4.6", "litellm==1.110.2", "openai==3.57.0", "httpx2==2.16.2",
    "httpcore2==2.16.2", "truststore==0.10.5", "jiter==0.19.0", "pydantic==2.14.4",
    "pydantic-core==2.50.5", "annotated-types==0.8.0", "typing-inspection==0.4.5",
    "typing-extensions==4.16.0", "anyio==4.16.0", "sniffio==1.3.1", "idna==3.20", "httpx==0.28.1",
    "httpcore==1.0.9", "h11==0.16.0", "certifi==2026.10.19.post1", "h2==4.4.1", "hpack==4.2.0",
    "hyperframe==6.1.0", "fastuuid==0.14.0", "filelock==4.3.1", "python-dotenv==1.2.4",
    "pyyaml==6.0.4", "packaging==26.4", "tiktoken==0.14.0", "regex==2026.11.19",
    "requests==2.34.2", "urllib3==2.8.0", "charset-normalizer==3.5.3", "jinja2==3.1.6",
    "markupsafe==3.0.4", "aiohttp==3.14.5", "aiohappyeyeballs==2.7.1", "aiosignal==1.4.0",
    "attrs==26.1.0", "frozenlist==1.8.0", "multidict==7.2.1", "propcache==0.5.4", "yarl==1.25.1",
    "click==8.5.1", "importlib-metadata==8.9.0", "zipp==4.1.2", "jsonschema==4.26.0",
    "referencing==0.37.0", "rpds-py==2026.9.1", "jsonschema-specifications==2025.9.1",
    "rich==15.0.0", "markdown-it-py==4.3.0", "mdurl==0.1.2", "pygments==2.21.0", "typer==0.29.2",
    "shellingham==1.5.4", "annotated-doc==0.0.7", "platformdirs==4.14.8", "prompt-toolkit==3.0.53",
    "wcwidth==0.9.4", "tenacity==9.2.1", "pydantic-settings==2.16.3",
)  # fmt: skip

#: What a run imports (the CLI, litellm's model class, the local environment): compiled once.
_WARM = "import minisweagent.run.mini, minisweagent.models.litellm_model, minisweagent.environments.local"


def mini_install_argv(home: Path) -> list[list[str]]:
    """The commands that install mini-swe-agent into a venv at ``home`` (of the system
    Python, which the sandbox has)."""
    python = str(home / "bin" / "python3")
    quiet = ["-q", "--disable-pip-version-check", "--no-deps", "--no-compile"]
    if importlib.util.find_spec("pip") is not None:  # this Python's pip installs into the venv
        steps = [
            ["/usr/bin/python3", "-m", "venv", "--without-pip", str(home)],
            [sys.executable, "-m", "pip", "--python", python, "install", *quiet, *MINI_SWE_AGENT_PINS],
        ]
    else:
        steps = [
            ["/usr/bin/python3", "-m", "venv", str(home)],
            [python, "-m", "pip", "install", *quiet, *MINI_SWE_AGENT_PINS],
        ]
    env = "MSWEA_SILENT_STARTUP=1 MSWEA_CONFIGURED=true LITELLM_LOCAL_MODEL_COST_MAP=True"
    return [*steps, ["/usr/bin/env", "-u", "PYTHONDONTWRITEBYTECODE", *env.split(), python, "-c", _WARM]]

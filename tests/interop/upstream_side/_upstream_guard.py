"""Make sure ``import openenv`` resolves to *upstream's* installed package.

Our own package is also called ``openenv`` and lives at the repo root.  When a
script here is run with the cwd at the repo root (``python -c``, ``-m``, or a
PYTHONPATH that names the repo), our package would shadow upstream's.  Import
this module first: it drops every sys.path entry that holds a top-level
``openenv`` directory outside site-packages, and ``check()`` verifies the
result after import.
"""

from __future__ import annotations

import os
import sys


def _shadows(entry: str) -> bool:
    base = entry or os.getcwd()
    if "site-packages" in base or "dist-packages" in base:
        return False
    return os.path.isdir(os.path.join(base, "openenv"))


sys.path[:] = [p for p in sys.path if not _shadows(p)]


def check() -> str:
    """Return upstream's version; exit 2 if the wrong ``openenv`` was imported."""
    import openenv  # noqa: F401

    path = os.path.abspath(getattr(openenv, "__file__", "") or "")
    if "site-packages" not in path:
        sys.stderr.write(f"upstream_side: imported the wrong openenv ({path}); "
                         "run with .venv-upstream/bin/python\n")
        sys.exit(2)
    from importlib.metadata import version

    return version("openenv")

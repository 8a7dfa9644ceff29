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


#: Exit status when upstream ``openenv.core`` cannot be imported at all (not installed,
#: broken install).  The pytest side turns exactly this status into a skip.
EXIT_NO_UPSTREAM = 5
#: Exit status when an ``openenv`` that is not upstream's was imported (a harness bug).
EXIT_WRONG_OPENENV = 2


def _no_upstream(exc: BaseException) -> None:
    sys.stderr.write(f"upstream_side: cannot import upstream openenv.core: "
                     f"{type(exc).__name__}: {exc}\n")
    sys.exit(EXIT_NO_UPSTREAM)


def check() -> str:
    """Return upstream's version.

    Exits ``EXIT_WRONG_OPENENV`` (2) if the ``openenv`` found is not an installed one,
    ``EXIT_NO_UPSTREAM`` (5) if upstream's ``openenv.core`` cannot be imported.
    """
    try:
        import openenv
    except Exception as exc:  # noqa: BLE001 - not installed in this interpreter
        _no_upstream(exc)

    path = os.path.abspath(getattr(openenv, "__file__", "") or "")
    if "site-packages" not in path:
        sys.stderr.write(f"upstream_side: imported the wrong openenv ({path}); "
                         "run with .venv-upstream/bin/python\n")
        sys.exit(EXIT_WRONG_OPENENV)
    try:
        import openenv.core  # noqa: F401  (every script needs it; it is the slow import)
    except Exception as exc:  # noqa: BLE001 - a broken or foreign install
        _no_upstream(exc)
    from importlib.metadata import version

    return version("openenv")

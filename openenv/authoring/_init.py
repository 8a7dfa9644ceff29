"""``openenv init NAME``: a new env package from the templates in ``templates/``.

Template files end in ``.tmpl``; ``__name__`` in a path and ``{{name}}``, ``{{Class}}``,
``{{Stem}}``, ``{{dist}}``, ``{{dashed}}``, ``{{title}}`` in the text are replaced.
The result passes ``openenv validate``, its own tests and ``openenv build`` as made.
"""

from __future__ import annotations

import keyword
import re
from importlib import resources
from importlib.abc import Traversable
from pathlib import Path

from .._exceptions import InitError as InitError  # re-exported: its home before the one tree

_NAME = re.compile(r"^[a-z][a-z0-9_]*$")


def names_for(name: str) -> dict[str, str]:
    """The placeholders for an env called ``name`` (``my-env`` and ``my_env`` alike)."""
    ident = name.strip().lower().replace("-", "_")
    if not _NAME.match(ident) or keyword.iskeyword(ident) or ident in ("openenv", "test", "tests"):
        raise InitError(f"{name!r} is not usable as an env name: use letters, digits and '_', letter first")
    stem = "".join(part.capitalize() for part in ident.removesuffix("_env").split("_") if part)
    dashed = ident.replace("_", "-")
    return {
        "name": ident,
        "Stem": stem,
        "Class": f"{stem}Env",
        "dist": f"openenv-{dashed}",
        "dashed": dashed,
        "title": f"{stem} env",
    }


def _walk(node: Traversable, rel: str = "") -> list[tuple[str, Traversable]]:
    out = []
    for child in node.iterdir():
        path = f"{rel}{child.name}"
        if child.is_dir():
            if child.name != "__pycache__":
                out.extend(_walk(child, path + "/"))
        elif child.name.endswith(".tmpl"):
            out.append((path.removesuffix(".tmpl"), child))
    return out


def render(text: str, values: dict[str, str]) -> str:
    for key, value in values.items():
        text = text.replace("{{" + key + "}}", value)
    return text


def init_env(name: str, directory: str | Path = ".") -> Path:
    """Write a new env package to ``<directory>/<name>``; returns that folder.

    Raises ``InitError`` for a bad name or a folder that exists and is not empty.
    """
    values = names_for(name)
    target = Path(directory) / values["name"]
    if target.exists() and any(target.iterdir()):
        raise InitError(f"{target} exists and is not empty")
    root = resources.files("openenv.authoring") / "templates"
    for rel, source in sorted(_walk(root)):
        dest = target / render(rel.replace("__name__", values["name"]), values)
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(render(source.read_text(), values))
    return target

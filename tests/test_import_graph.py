"""The import graph of ``openenv/`` has no circles, and follows the layering below.

Every ``import`` counts: top-level, inside functions and under ``TYPE_CHECKING``,
relative ones resolved. A *part* is a subpackage (``server``, ``mcp``...), the
``cli`` (with ``__main__``), the package face ``openenv/__init__.py``, or ``base``: the
private modules at the top (``_models``, ``_env``, ``_protocol``, ``_exceptions``...).

``MAY_IMPORT`` is the layering, also drawn at the top of ``docs/architecture.md``
(a test below keeps the two equal). The adapters (``ADAPTERS``: the upstream-compat
``openenv.core`` and ``openenv.auto``) sit on top: they may import any part, and each other's public
modules only (no ``_`` in the path), and no part imports them; either may be absent.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

#: Which part may import which (besides its own modules), bottom to top.
MAY_IMPORT: dict[str, frozenset[str]] = {
    "base": frozenset(),
    "sandbox": frozenset({"base"}),
    "tasks": frozenset({"base"}),
    "verifiers": frozenset({"base", "tasks"}),
    "rewards": frozenset({"base"}),
    "containers": frozenset({"base"}),
    "capture": frozenset({"base"}),
    "catalog": frozenset({"base"}),
    "hub": frozenset({"base", "containers"}),
    "client": frozenset({"base", "containers", "hub"}),
    # AutoEnv and AutoAction (installed env packages, Spaces): upstream's names in openenv.auto
    "resolve": frozenset({"base", "client", "hub"}),
    "gym": frozenset({"base", "client"}),
    "k8s": frozenset({"base", "containers", "client"}),
    "server": frozenset({"base", "tasks", "gym", "sandbox", "verifiers"}),
    "mcp": frozenset({"base", "containers", "server"}),
    "harness": frozenset({"base", "containers", "server", "capture"}),
    "train": frozenset({"base", "client", "containers", "mcp"}),
    "policy": frozenset({"base", "train"}),
    "eval": frozenset({"base", "client", "containers", "hub", "server", "policy", "rewards", "harness"}),
    "agentrl": frozenset({"base", "client", "capture", "server", "train", "policy"}),
    # the build recipe; an env class; the oracle's plan a manifest names
    "authoring": frozenset({"base", "containers", "server", "eval", "policy"}),
    "cli": frozenset(
        {"base", "authoring", "capture", "containers", "eval", "hub", "k8s", "mcp", "policy", "sandbox"}
        | {"server", "train", "catalog", "verifiers", "agentrl"}
    ),
    "openenv": frozenset({"base", "client"}),
}
#: Top-of-stack adapters: may import every part above, but not each other's private modules.
ADAPTERS = frozenset({"core", "auto", "validation", "discovery", "harbor"})

Graph = dict[str, set[str]]


# --- the graph ---------------------------------------------------------------------------------


def modules_of(root: Path, package: str = "openenv") -> dict[str, Path]:
    """Every module of ``package`` under ``root``, by dotted name (a package by its own name)."""
    found = {}
    for path in sorted((root / package).rglob("*.py")):
        parts = list(path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _known(name: str, modules: Mapping[str, Path]) -> str | None:
    """The longest prefix of ``name`` that is a module of ours (``a.b.Class`` -> ``a.b``)."""
    while name not in modules:
        if "." not in name:
            return None
        name = name.rsplit(".", 1)[0]
    return name


def imported_by(name: str, path: Path, modules: Mapping[str, Path]) -> set[str]:
    """The modules of ours that module ``name`` imports, anywhere in its source."""
    is_package = path.name == "__init__.py"
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                anchor = name.split(".") if is_package else name.split(".")[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                source = ".".join(anchor + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            submodules = [f"{source}.{a.name}" for a in node.names if f"{source}.{a.name}" in modules]
            targets = submodules
            if len(submodules) < len(node.names):  # names from the module itself
                targets.append(source)
        for target in targets:
            known = _known(target, modules)
            if known is not None and known != name:
                out.add(known)
    return out


def import_graph(root: Path = ROOT, package: str = "openenv") -> Graph:
    modules = modules_of(root, package)
    return {name: imported_by(name, path, modules) for name, path in modules.items()}


def part_of(module: str) -> str:
    parts = module.split(".")
    if len(parts) == 1:
        return "openenv"
    if parts[1] in ("cli", "__main__"):
        return "cli"
    if parts[1].startswith("_"):
        return "base"
    return parts[1]


def circles(graph: Mapping[str, Iterable[str]]) -> list[list[str]]:
    """The strongly connected components with more than one node (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth is bounded by the number of modules
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return sorted(found)


def part_graph(graph: Graph) -> Graph:
    parts: Graph = {}
    for source, targets in graph.items():
        edges = parts.setdefault(part_of(source), set())
        edges.update(part_of(t) for t in targets if part_of(t) != part_of(source))
    return parts


def _where(graph: Graph, source_part: str, target_part: str) -> list[str]:
    return sorted(
        f"{s} -> {t}" for s, ts in graph.items() for t in ts
        if part_of(s) == source_part and part_of(t) == target_part
    )


GRAPH = import_graph()


# --- the checks --------------------------------------------------------------------------------


def test_no_circle_between_parts():
    parts = part_graph(GRAPH)
    found = circles(parts)
    detail = [
        f"{' <-> '.join(circle)}: " + "; ".join(
            edge for a in circle for b in circle if b in parts[a] for edge in _where(GRAPH, a, b)
        )
        for circle in found
    ]
    assert found == [], "import circles between parts of openenv:\n" + "\n".join(detail)


@pytest.mark.parametrize("part", sorted({part_of(m) for m in GRAPH}))
def test_no_circle_between_modules_of_one_part(part):
    inside = {m: {t for t in ts if part_of(t) == part} for m, ts in GRAPH.items() if part_of(m) == part}
    assert circles(inside) == []


def test_every_part_is_placed_in_the_layering():
    unplaced = {part_of(m) for m in GRAPH} - set(MAY_IMPORT) - ADAPTERS
    assert not unplaced, f"place {sorted(unplaced)} in MAY_IMPORT here and in docs/architecture.md"


def test_imports_follow_the_layering():
    wrong = []
    for source, targets in GRAPH.items():
        a = part_of(source)
        for target in targets:
            b = part_of(target)
            if a == b:
                continue
            if b in ADAPTERS:
                # Another adapter, or the package face for upstream's top-level names
                # (``from openenv import AutoEnv``): only the adapter's public modules.
                allowed = (a in ADAPTERS or a == "openenv") and not any(
                        seg.startswith("_") for seg in target.split(".")[2:]
                    )
            elif a in ADAPTERS:
                allowed = True
            else:
                allowed = b in MAY_IMPORT.get(a, frozenset())
            if not allowed:
                wrong.append(f"{source} -> {target} ({a} may not import {b})")
    assert wrong == []


def test_the_layering_itself_has_no_circle():
    assert circles(MAY_IMPORT) == []
    assert set().union(*MAY_IMPORT.values()) <= set(MAY_IMPORT)
    assert not ADAPTERS & set(MAY_IMPORT)


def test_docs_architecture_states_the_same_layering():
    text = (ROOT / "docs" / "architecture.md").read_text()
    rows = re.findall(r"^\| `(\w+)` \| ([^|]*) \|", text, re.MULTILINE)
    documented = {
        part: frozenset(re.findall(r"`(\w+)`", allowed)) for part, allowed in rows
        if part in MAY_IMPORT or part in ADAPTERS
    }
    assert {p: d for p, d in documented.items() if p not in ADAPTERS} == MAY_IMPORT
    assert set(documented) >= ADAPTERS


# --- the checker finds what it should ----------------------------------------------------------


def test_the_graph_sees_function_level_and_relative_imports():
    # openenv serve's `gym:` targets: an import inside a function of server/_serve.py
    assert "openenv.gym" in GRAPH["openenv.server._serve"]
    # relative, from a package __init__: `from ._app import create_app`
    assert "openenv.server._app" in GRAPH["openenv.server"]


def test_a_circle_through_a_function_level_relative_import_is_found(tmp_path):
    pkg = tmp_path / "openenv"
    for folder, body in {
        "a": "from ..b import thing\n",
        "b": "def thing():\n    from ..a._x import y\n    return y\n",
    }.items():
        (pkg / folder).mkdir(parents=True)
        (pkg / folder / "__init__.py").write_text(body)
    (pkg / "__init__.py").write_text("")
    (pkg / "a" / "_x.py").write_text("from . import _y\ny = 1\n")
    (pkg / "a" / "_y.py").write_text("if False:\n    from ._x import y\n")
    graph = import_graph(tmp_path)
    assert circles(part_graph(graph)) == [["a", "b"]]
    inside_a = {m: {t for t in ts if part_of(t) == "a"} for m, ts in graph.items() if part_of(m) == "a"}
    assert circles(inside_a) == [["openenv.a._x", "openenv.a._y"]]

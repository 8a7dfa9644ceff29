"""``openenv._lazy.lazy_exports``: the one lazy-export helper every package ``__init__`` uses."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from openenv._lazy import lazy_exports

ROOT = Path(__file__).resolve().parents[1]
#: Packages still writing their own ``__getattr__`` (their owners' next edit moves them).
OWN_GETATTR: set[str] = set()


def test_loads_on_first_use_caches_and_says_what_is_missing(monkeypatch: pytest.MonkeyPatch) -> None:
    package = types.ModuleType("lazy_probe")
    package.__path__ = []  # a package, for relative names
    monkeypatch.setitem(sys.modules, "lazy_probe", package)
    checked: list[str] = []
    getattr_, dir_ = lazy_exports(
        "lazy_probe",
        {"dumps": "json"},
        ["dumps", "here"],
        missing={"Gone": "upstream's only"},
        check=checked.append,
    )
    import json

    assert getattr_("dumps") is json.dumps
    assert checked == ["dumps"]
    assert vars(package)["dumps"] is json.dumps  # cached: the next lookup skips __getattr__
    assert {"dumps", "here"} <= set(dir_())
    with pytest.raises(AttributeError, match=r"lazy_probe\.Gone is upstream OpenEnv's, not provided here"):
        getattr_("Gone")
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr_("nope")


def _package_inits() -> list[Path]:
    """Every ``__init__.py`` of ``openenv`` and of the env packages in ``envs/``."""
    envs = [p for env in (ROOT / "envs").iterdir() for p in env.glob("*/__init__.py")]
    return [*(ROOT / "openenv").rglob("__init__.py"), *envs]


def test_no_package_writes_its_own_getattr() -> None:
    inits = _package_inits()
    assert ROOT / "envs" / "coding_env" / "coding_env" / "__init__.py" in inits
    own = sorted(str(p.relative_to(ROOT)) for p in inits if "def __getattr__" in p.read_text())
    assert own == sorted(OWN_GETATTR)


def test_an_env_package_loads_its_env_class_on_first_use() -> None:
    import subprocess
    import sys

    probe = (
        "import sys, coding_env\n"
        "assert 'coding_env.env' not in sys.modules\n"
        "from coding_env import CodingEnv\n"
        "assert CodingEnv.__module__ == 'coding_env.env' and 'CodingEnv' in dir(coding_env)\n"
    )
    subprocess.run([sys.executable, "-c", probe], check=True, timeout=120)


def test_also_exports_another_modules_all_loaded_on_first_use(monkeypatch: pytest.MonkeyPatch) -> None:
    package = types.ModuleType("lazy_also")
    package.__path__ = []
    monkeypatch.setitem(sys.modules, "lazy_also", package)
    part = types.ModuleType("lazy_also.part")
    part.__all__ = ["Zed", "alpha", "ONE"]  # type: ignore[attr-defined]
    part.Zed, part.alpha, part.ONE = "z", "a", 1  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "lazy_also.part", part)
    getattr_, dir_ = lazy_exports("lazy_also", {"dumps": "json"}, also=".part", missing={"Gone": "not here"})

    assert getattr_("__all__") == ["ONE", "Zed", "alpha", "dumps"]  # ruff's RUF022 order
    assert getattr_("Zed") == "z"
    assert vars(package)["Zed"] == "z"
    assert {"ONE", "alpha", "dumps"} <= set(dir_())
    with pytest.raises(AttributeError, match="not provided here"):
        getattr_("Gone")
    with pytest.raises(AttributeError, match="has no attribute 'nope'"):
        getattr_("nope")


def test_export_list_is_each_modules_names_once_in_ruff_order() -> None:
    from openenv._lazy import export_list

    one, two = types.ModuleType("one"), types.ModuleType("two")
    one.__all__ = ["b", "Action", "X"]  # type: ignore[attr-defined]
    two.__all__ = ["Action", "a"]  # type: ignore[attr-defined]
    assert export_list(one, two) == ["X", "Action", "a", "b"]

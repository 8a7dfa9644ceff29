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


def test_no_package_writes_its_own_getattr() -> None:
    own = sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "openenv").rglob("__init__.py")
        if "def __getattr__" in p.read_text()
    )
    assert own == sorted(OWN_GETATTR)

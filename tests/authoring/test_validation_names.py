"""``openenv.validation``: upstream 0.10's names over ours, and nothing more (the rule
``tests/core/test_name_layer.py`` measures ``openenv.core`` by)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import openenv.validation as names
from tests.core.test_name_layer import logic_in

ROOT = Path(__file__).resolve().parents[2]
UPSTREAM_INIT = ROOT / ".venv-upstream/lib/python3.11/site-packages/openenv/validation/__init__.py"


@pytest.mark.parametrize("module", sorted(p.name for p in (ROOT / "openenv/validation").glob("*.py")))
def test_every_module_is_a_name_layer(module: str) -> None:
    assert logic_in((ROOT / "openenv/validation" / module).read_text()) == []


def test_every_upstream_name_is_ours_or_says_why_not() -> None:
    if not UPSTREAM_INIT.is_file():
        pytest.skip(f"upstream OpenEnv 0.10 is not installed: {UPSTREAM_INIT} is missing")
    tree = ast.parse(UPSTREAM_INIT.read_text())
    upstream = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", "") == "__all__"
    )
    provided = set(names.__all__)
    for name in sorted(set(upstream) - provided):
        with pytest.raises(AttributeError, match="upstream OpenEnv's, not provided here: "):
            getattr(names, name)
    assert len(provided & set(upstream)) >= 19


def test_the_names_are_our_classes() -> None:
    from openenv.authoring._policy import Level
    from openenv.authoring._vreport import CheckResult

    assert names.Level is Level
    assert names.CheckResult is CheckResult
    report = names.run_validation(ROOT / "envs" / "echo_env", max_level=names.Level.STATIC)
    assert isinstance(report, names.ValidationReport)
    assert report.get("static.manifest").status is names.CheckStatus.PASS
    assert names.write_report(report).startswith("{")

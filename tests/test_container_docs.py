"""The container docs say what the code does (the server is Starlette, not FastAPI)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_readme_says_openenv_build_needs_the_docker_extra() -> None:
    readme = (ROOT / "docs" / "tour.md").read_text()  # the README's tour
    section = readme[readme.index("## Run it in a container"):]
    section = section[: section.index("\n## ", 3)]
    assert "pip install 'openenv[docker]'" in section
    assert "openenv ps" in section
    assert "openenv stop" in section


def test_the_image_tooling_uses_the_servers_stack_not_fastapi() -> None:
    for script in ("build_wheelhouse.sh", "smoke_test.sh"):
        text = (ROOT / "scripts" / "docker" / script).read_text()
        assert not re.search(r"\bimport fastapi\b|from fastapi\b|RUNTIME_REQS=\(fastapi", text), script
    doc = (ROOT / "docker" / "README.md").read_text()
    assert "FastAPI `/health`" not in doc
    assert "wheels `fastapi" not in doc
    assert "re-raises the signal" not in doc  # openenv serve exits 0 after SIGTERM


def test_docker_readme_knob_table_says_what_unset_and_set_do() -> None:
    doc = (ROOT / "docker" / "README.md").read_text()
    assert "| script | knob | when unset | when set |" in doc
    row = next(line for line in doc.splitlines() if "`OPENENV_SKIP_DEBOOTSTRAP=1`" in line)
    assert row.endswith("| installs debootstrap too | does not install debootstrap |")

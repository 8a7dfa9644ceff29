"""``openenv build`` wheels a project from a copy of its sources, never in its own tree:
``pip wheel`` writes setuptools' ``build/`` and ``*.egg-info`` into the folder it is given,
and two builds of one checkout at once failed on ``build/bdist.*`` ("File exists"); a
stale ``build/lib`` could also put a deleted module into the wheel."""

from __future__ import annotations

from pathlib import Path

from openenv.containers._build import source_copy


def test_the_copy_holds_the_sources_and_no_build_output(tmp_path: Path) -> None:
    project = tmp_path / "env"
    for name, text in {
        "pyproject.toml": "[project]\nname = 'x'\n",
        "README.md": "x\n",
        "Dockerfile": "FROM scratch\n",
        "x_env/__init__.py": "",
        "x_env/tasks/a/task.toml": "id = 'a'\n",
        "x_env/__pycache__/m.cpython-311.pyc": "",
        "build/lib/x_env/gone.py": "stale = True\n",
        "x_env.egg-info/PKG-INFO": "",
        ".venv/bin/python": "",
        "notes/plan.txt": "not a package\n",
    }.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    copy = source_copy(project, tmp_path / "src")
    assert sorted(str(p.relative_to(copy)) for p in copy.rglob("*") if p.is_file()) == [
        "Dockerfile",
        "README.md",
        "pyproject.toml",
        "x_env/__init__.py",
        "x_env/tasks/a/task.toml",
    ]
    assert (project / "build/lib/x_env/gone.py").is_file()  # the project itself is left as it was

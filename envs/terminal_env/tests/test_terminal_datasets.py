"""Harbor datasets as task sets: a dataset folder (``dataset.toml``) with splits, a local
registry file (every dataset a split), ``name@version`` looked up in one; the files
checked by Harbor's own models where its venv is present.

The tasks are built-in ones (sandboxed: no Docker needed)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from terminal_env import SubmitAction, TerminalEnv
from terminal_env._datasets import REGISTRY_ENV
from terminal_env._harbor import TaskFormatError
from terminal_env._tasks import TASKS_DIR, HarborTaskSet
from terminal_env.harbor_digest import write_digests

HARBOR_PY = Path(__file__).resolve().parents[3] / ".venv-harbor" / "bin" / "python"
DIGEST = "sha256:" + "0" * 64
MANIFEST = f"""[dataset]
name = "openenv/mini"
version = "1.0"
description = "three built-in tasks"

[[tasks]]
name = "openenv/create-hello"
digest = "{DIGEST}"

[[tasks]]
name = "openenv/csv-column-sum"
digest = "{DIGEST}"

[[tasks]]
name = "openenv/top-ips"
digest = "{DIGEST}"

[[tasks]]
name = "openenv/not-here"
digest = "{DIGEST}"

[metadata.splits]
train = ["openenv/create-hello", "csv-column-sum"]
test = ["openenv/top-ips"]
"""


def _dataset(root: Path) -> Path:
    folder = root / "mini"
    folder.mkdir()
    for name in ("create-hello", "csv-column-sum", "top-ips"):
        shutil.copytree(TASKS_DIR / name, folder / name)
    (folder / "dataset.toml").write_text(MANIFEST)
    write_digests(folder)  # each task pinned by its content, as Harbor's sync writes it
    return folder


def _registry(root: Path) -> Path:
    tasks = root / "tasks"
    tasks.mkdir()
    for name in ("create-hello", "top-ips"):
        shutil.copytree(TASKS_DIR / name, tasks / name)
    registry = [
        {
            "name": "openenv/mini",
            "version": "1.0",
            "description": "one task and one on git",
            "tasks": [
                {"name": "create-hello", "path": "tasks/create-hello"},
                {
                    "name": "far-away",
                    "git_url": "https://example.com/t.git",
                    "git_commit_id": "abc",
                    "path": "t",
                },
            ],
        },
        {
            "name": "openenv/mini",
            "version": "2.0",
            "description": "two",
            "tasks": [
                {"name": "create-hello", "path": "tasks/create-hello"},
                {"name": "top-ips", "path": "tasks/top-ips"},
            ],
        },
    ]
    path = root / "registry.json"
    path.write_text(json.dumps(registry, indent=2))
    return path


def _ids(tasks: HarborTaskSet, split: str) -> list[str]:
    return [tasks.get(i, split=split).id for i in range(tasks.num_tasks(split))]


def test_a_dataset_folder_is_a_task_set_with_its_splits(tmp_path: Path) -> None:
    tasks = HarborTaskSet(_dataset(tmp_path)).load()
    assert sorted(tasks.splits) == ["test", "train"]
    assert _ids(tasks, "train") == ["create-hello", "csv-column-sum"]
    assert _ids(tasks, "test") == ["top-ips"]
    assert "no folder 'not-here'" in tasks.broken["not-here"]


def test_a_registry_file_serves_each_dataset_as_a_split_and_names_lookups(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    registry = _registry(tmp_path)
    tasks = HarborTaskSet(registry).load()
    assert _ids(tasks, "openenv/mini@1.0") == ["create-hello"]
    assert _ids(tasks, "openenv/mini@2.0") == ["create-hello", "top-ips"]
    assert "not fetched here" in tasks.broken["far-away"]
    monkeypatch.setenv(REGISTRY_ENV, str(registry))
    one = HarborTaskSet("openenv/mini@1.0").load()
    assert _ids(one, "train") == ["create-hello"]
    assert _ids(HarborTaskSet("openenv/mini").load(), "train") == ["create-hello", "top-ips"]  # the last
    with pytest.raises(
        TaskFormatError, match=r"'openenv/mini@9' is not in the registry \(it has openenv/mini@1.0"
    ):
        HarborTaskSet("openenv/mini@9").load()


def test_a_name_without_a_registry_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REGISTRY_ENV, raising=False)
    with pytest.raises(TaskFormatError, match=f"no {REGISTRY_ENV} names a registry.json"):
        HarborTaskSet("openenv/mini@1.0").load()


async def test_the_env_serves_a_datasets_split(tmp_path: Path) -> None:
    env = TerminalEnv(tasks_dir=str(_dataset(tmp_path)))
    try:
        obs = await env.reset(options={"split": "test", "index": 0})
        assert (await env.state()).task_id == "top-ips"
        assert obs.instruction == (tmp_path / "mini" / "top-ips" / "instruction.md").read_text().strip()
        done = await env.step(SubmitAction())
        assert done.reward is not None
        assert done.reward < 1.0
    finally:
        await env.close()


def test_harbors_own_models_read_these_files(tmp_path: Path) -> None:
    """The manifest and the registry are in the format Harbor writes: its models parse them."""
    if not HARBOR_PY.exists():
        pytest.skip(f"needs Harbor's venv ({HARBOR_PY}; scripts/setup.d/56-harbor.sh)")
    folder, registry = _dataset(tmp_path), _registry(tmp_path)
    code = (
        "import sys; from pathlib import Path\n"
        "from harbor.models.dataset.manifest import DatasetManifest\n"
        "from harbor.models.registry import Registry\n"
        "m = DatasetManifest.from_toml_file(sys.argv[1])\n"
        "r = Registry.from_path(Path(sys.argv[2]))\n"
        "print(m.dataset.name, len(m.tasks), [f'{d.name}@{d.version}:{len(d.tasks)}' for d in r.datasets])\n"
    )
    done = subprocess.run(
        [str(HARBOR_PY), "-c", code, str(folder / "dataset.toml"), str(registry)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "openenv/mini 4 ['openenv/mini@1.0:2', 'openenv/mini@2.0:2']"

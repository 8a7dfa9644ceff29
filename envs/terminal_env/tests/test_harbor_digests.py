"""Harbor's task digests: ours equal Harbor's own (its ``Packager`` on the same folders,
its ``harbor sync`` on the same dataset), a dataset whose digests we wrote is served
whole, and a task changed after it was pinned is not served (the rest is).

Sandboxed built-in tasks and a test task with wheels; no Docker.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest
from _harbor_fixtures import TASKS as TEST_TASKS
from terminal_env._tasks import TASKS_DIR, HarborTaskSet
from terminal_env.harbor_digest import DigestError, main, task_digest, write_digests

HARBOR_PY = Path(__file__).resolve().parents[3] / ".venv-harbor" / "bin" / "python"
NAMES = ("create-hello", "csv-column-sum", "top-ips")
MANIFEST = """[dataset]
name = "openenv/mini"
version = "1.0"

[[tasks]]
name = "openenv/create-hello"
digest = "sha256:{zeros}"

[[tasks]]
name = "openenv/csv-column-sum"
digest = "sha256:{zeros}"  # pinned to nothing real

[[tasks]]
name = "openenv/top-ips"
digest = "sha256:{zeros}"

[metadata.splits]
train = ["openenv/create-hello", "csv-column-sum"]
test = ["openenv/top-ips"]
""".replace("{zeros}", "0" * 64)

HARBOR_SIDE = """
import json, sys
from pathlib import Path
from harbor.cli.sync import sync_dataset
from harbor.publisher.packager import Packager
folders, dataset = sys.argv[1:-1], Path(sys.argv[-1])
digests = ["sha256:" + Packager.compute_content_hash(Path(f))[0] for f in folders]
sync_dataset(dataset)
print(json.dumps(digests))
"""


def _dataset(root: Path, *, named: bool = False, unpinned: tuple[str, ...] = ()) -> Path:
    folder = root / "mini"
    folder.mkdir(parents=True)
    for name in NAMES:
        shutil.copytree(TASKS_DIR / name, folder / name, ignore=shutil.ignore_patterns("__pycache__"))
        if named:  # how Harbor's sync finds a task: its task.toml's [task] name
            with (folder / name / "task.toml").open("a") as f:
                f.write(f'\n[task]\nname = "openenv/{name}"\n')
    text = MANIFEST
    for name in unpinned:
        row = f'name = "openenv/{name}"\n'
        text = text.replace(f'{row}digest = "sha256:{"0" * 64}"\n', row)
    (folder / "dataset.toml").write_text(text)
    return folder


def _odd_task(root: Path) -> Path:
    """A task with what the file rules are about: caches, editor files, links, steps."""
    task = root / "odd"
    shutil.copytree(TASKS_DIR / "top-ips", task)
    (task / "README.md").write_text("about\n")
    (task / "environment" / "__pycache__").mkdir(exist_ok=True)
    (task / "environment" / "__pycache__" / "m.cpython-311.pyc").write_bytes(b"\0cache")
    (task / "environment" / "notes.txt~").write_text("backup\n")
    (task / "tests" / ".harborignore").write_text("# nothing ignored\n")
    (task / "solution" / "linked.sh").symlink_to("solve.sh")
    (task / "environment" / "linked-dir").symlink_to(task / "tests", target_is_directory=True)
    (task / "steps" / "one").mkdir(parents=True)
    (task / "steps" / "one" / "instruction.md").write_text("step one\n")
    (task / "unlisted.txt").write_text("not part of the task\n")
    return task


def _manifest_digests(folder: Path) -> dict[str, str]:
    doc = tomllib.loads((folder / "dataset.toml").read_text())
    return {row["name"]: row.get("digest", "") for row in doc["tasks"]}


def test_our_digests_are_harbors(tmp_path: Path) -> None:
    if not HARBOR_PY.exists():
        pytest.skip(f"needs Harbor's venv ({HARBOR_PY}; scripts/setup.d/56-harbor.sh)")
    ignored = tmp_path / "ignored"
    shutil.copytree(TASKS_DIR / "create-hello", ignored)
    (ignored / ".gitignore").write_text("*.log\n")
    (ignored / "tests" / "run.log").write_text("left over\n")
    (ignored / "tests" / "x.pyc").write_bytes(b"kept: .gitignore replaces the defaults")
    folders = [TASKS_DIR / "top-ips", TEST_TASKS / "markdown-table", _odd_task(tmp_path), ignored]
    ours_dir = _dataset(tmp_path / "ours", named=True)
    theirs_dir = _dataset(tmp_path / "theirs", named=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "PYTHON"))}
    done = subprocess.run(
        [str(HARBOR_PY), "-c", HARBOR_SIDE, *map(str, folders), str(theirs_dir)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert [task_digest(f) for f in folders] == json.loads(done.stdout.strip().splitlines()[-1])
    write_digests(ours_dir)
    theirs = _manifest_digests(theirs_dir)
    assert "sha256:" + "0" * 64 not in theirs.values()  # Harbor's sync found every task
    assert _manifest_digests(ours_dir) == theirs  # and wrote what we write


def test_a_task_changed_after_it_was_pinned_is_not_served(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = _dataset(tmp_path, unpinned=("create-hello", "top-ips"))
    assert "digest" not in (folder / "dataset.toml").read_text().split("[[tasks]]")[1]
    loaded = HarborTaskSet(folder).load()
    assert "changed since it was pinned" in loaded.broken["csv-column-sum"]  # the zeros
    assert main(["--check", str(folder)]) == 1  # two unpinned, one pinned wrong
    changed = write_digests(folder)
    assert sorted(changed) == [f"openenv/{n}" for n in NAMES]
    assert changed["openenv/csv-column-sum"][0] == "sha256:" + "0" * 64
    assert write_digests(folder) == {}  # written once, nothing left to change
    assert main(["--check", str(folder)]) == 0
    tasks = HarborTaskSet(folder).load()
    assert tasks.broken == {}
    assert tasks.num_tasks("train") == 2
    with (folder / "top-ips" / "tests" / "test.sh").open("a") as f:
        f.write("\necho 1 > /logs/verifier/reward.txt\n")  # what pinning guards against
    capsys.readouterr()
    assert main(["--check", str(folder)]) == 1
    assert capsys.readouterr().out.startswith("openenv/top-ips: pinned to sha256:")
    tasks = HarborTaskSet(folder).load()
    assert "changed since it was pinned" in tasks.broken["top-ips"], tasks.broken
    assert tasks.num_tasks("test") == 0  # the split still loads, without it
    assert tasks.num_tasks("train") == 2


def test_what_a_digest_cannot_be_computed_for_is_said(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    task = tmp_path / "ruled"
    shutil.copytree(TASKS_DIR / "top-ips", task)
    (task / "tests" / ".harborignore").write_text("fixtures/\n")
    with pytest.raises(DigestError, match=r"tests/.harborignore has rules; only Harbor applies them"):
        task_digest(task)
    assert main([str(tmp_path / "nowhere")]) == 2
    assert capsys.readouterr().err.count("\n") == 1  # one line, no traceback

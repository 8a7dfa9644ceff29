"""Bad task folders among good ones: each is a clear error for that task, and the rest of
the set is still served (real Docker; the format checks need none)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from _harbor_fixtures import TASKS, copy_task, docker_base, episode, task_env
from terminal_env._harbor import ImageSettings, TaskFormatError
from terminal_env._image import image_tag, rewrite_dockerfile
from terminal_env._tasks import HarborTaskSet

from openenv._exceptions import ExecutionError, ValidationFailed


def bad_set(root: Path) -> Path:
    """One good task and one of each kind of bad one."""
    copy_task("word-counts", root)
    (copy_task("word-counts", root, new_name="no-instruction") / "instruction.md").unlink()
    copy_task("word-counts", root, new_name="bad-toml", toml_extra="[environment\n")
    copy_task("word-counts", root, new_name="allowlist", toml_extra="[x]\n").joinpath("task.toml").write_text(
        '[environment]\nnetwork_mode = "allowlist"\n'
    )
    (copy_task("word-counts", root, new_name="no-tests") / "tests" / "test.sh").unlink()
    broken = copy_task("word-counts", root, new_name="build-fails")
    with (broken / "environment" / "Dockerfile").open("a") as f:
        f.write('RUN echo "the compiler is missing" >&2 && exit 3\n')
    slow = copy_task("word-counts", root, new_name="build-hangs", toml_extra="")
    toml = slow / "task.toml"
    toml.write_text(toml.read_text().replace("build_timeout_sec = 300.0", "build_timeout_sec = 3.0"))
    with (slow / "environment" / "Dockerfile").open("a") as f:
        f.write("RUN sleep 120\n")
    hang = copy_task("word-counts", root, new_name="test-hangs")
    toml = hang / "task.toml"
    toml.write_text(
        toml.read_text().replace("[verifier]\ntimeout_sec = 60.0", "[verifier]\ntimeout_sec = 3.0")
    )
    (hang / "tests" / "test.sh").write_text("#!/bin/bash\nsleep 600\necho 1 > /logs/verifier/reward.txt\n")
    garbage = copy_task("word-counts", root, new_name="garbage-reward")
    (garbage / "tests" / "test.sh").write_text("#!/bin/bash\necho 'all good!' > /logs/verifier/reward.txt\n")
    garbage_json = copy_task("word-counts", root, new_name="garbage-json")
    (garbage_json / "tests" / "test.sh").write_text(
        '#!/bin/bash\necho \'{"reward": "high"}\' > /logs/verifier/reward.json\n'
    )
    silent = copy_task("word-counts", root, new_name="no-reward")
    (silent / "tests" / "test.sh").write_text("#!/bin/bash\necho done\n")
    return root


def test_unreadable_folders_are_named_with_their_reason_and_not_served(tmp_path: Path) -> None:
    tasks = HarborTaskSet(bad_set(tmp_path))
    tasks.load()
    served = {tasks.get(i).id for i in range(tasks.num_tasks())}
    assert "word-counts" in served
    assert "build-fails" in served  # known only when built
    assert tasks.broken == {
        "no-instruction": "task 'no-instruction': no instruction.md",
        "bad-toml": tasks.broken["bad-toml"],
        "allowlist": tasks.broken["allowlist"],
        "no-tests": "task 'no-tests': task.toml: a task with an image of its own needs tests/test.sh",
    }
    assert tasks.broken["bad-toml"].startswith("task 'bad-toml': task.toml: ")
    assert "network_mode = 'allowlist'" in tasks.broken["allowlist"]


def test_task_toml_fields() -> None:
    got = ImageSettings.from_toml(
        {
            "environment": {
                "memory": "2G",
                "storage_mb": 512,
                "cpus": 2,
                "allow_internet": True,
                "env": {"A": 1},
            },
            "verifier": {"env": {"B": "x"}},
        }
    )
    assert (got.memory_mb, got.storage_mb, got.cpus, got.network) == (2048, 512, 2.0, True)
    assert (got.env, got.verifier_env) == ({"A": "1"}, {"B": "x"})
    assert not ImageSettings.from_toml({}).network  # no network unless asked for
    for bad in ({"memory_mb": "lots"}, {"cpus": -1}, {"workdir": "app"}, {"allow_internet": "yes"}):
        with pytest.raises(TaskFormatError):
            ImageSettings.from_toml({"environment": bad})


def test_from_lines_are_mapped_but_not_stage_names_or_args() -> None:
    text = (
        "ARG V=1\nFROM python:3.11-slim AS build\nRUN true\nFROM --platform=linux/amd64 build\n"
        "FROM ubuntu:24.04\nFROM ${BASE}\n"
    )
    mapping = {"python:3.11-slim": "local/py", "ubuntu:24.04": "local/ubuntu", "build": "nope"}
    assert rewrite_dockerfile(text, mapping) == (
        "ARG V=1\nFROM local/py AS build\nRUN true\nFROM --platform=linux/amd64 build\n"
        "FROM local/ubuntu\nFROM ${BASE}\n"
    )


def test_the_image_tag_follows_the_folder_content(tmp_path: Path) -> None:
    env_dir = copy_task("word-counts", tmp_path) / "environment"
    first = image_tag("word-counts", env_dir, {})
    assert image_tag("word-counts", env_dir, {}) == first
    assert image_tag("word-counts", env_dir, {"python:3.11-slim": "x"}) != first
    (env_dir / "notes.txt").write_text("changed\n")
    assert image_tag("word-counts", env_dir, {}) != first


@pytest.mark.docker
@pytest.mark.timeout(600)
async def test_each_bad_task_fails_alone_and_the_good_one_is_still_served(tmp_path: Path) -> None:
    base = docker_base()
    root = bad_set(tmp_path)
    solve = (TASKS / "word-counts" / "solution" / "solve.sh").read_text()
    async with task_env(root, base) as env:
        with pytest.raises(ValidationFailed, match=r"'no-instruction' is not served: .*no instruction\.md"):
            await env.reset(options={"task_id": "no-instruction"})
        with pytest.raises(ExecutionError) as built:
            await env.reset(options={"task_id": "build-fails"})
        message = str(built.value)
        assert message.startswith("task 'build-fails': building its image failed: ")
        assert "the compiler is missing" in message  # the build's last lines, in the one message
        assert "returned a non-zero code: 3" in message
        t0 = time.monotonic()
        with pytest.raises(
            ExecutionError, match=r"building its image failed: over its build_timeout_sec \(3 s\)"
        ):
            await env.reset(options={"task_id": "build-hangs"})
        assert time.monotonic() - t0 < 60  # not the step's 120 s
        t0 = time.monotonic()
        hung = await episode(env, "test-hangs", solve)
        assert time.monotonic() - t0 < 60  # the 3 s verifier timeout, not the test's 600 s
        assert hung.reward == 0.0
        assert hung.metadata["reward_breakdown"]["error"] == "the verifier ran past its timeout_sec (3 s)"
        garbage = await episode(env, "garbage-reward", solve)
        assert garbage.reward == 0.0
        assert garbage.metadata["reward_breakdown"]["error"] == "reward.txt holds 'all good!', not a number"
        assert "verifier error" in (garbage.output or "")
        garbage_json = await episode(env, "garbage-json", solve)
        assert (
            garbage_json.metadata["reward_breakdown"]["error"]
            == "reward.json: 'reward' is 'high', not a finite number"
        )
        silent = await episode(env, "no-reward", solve)
        assert (
            "wrote no /logs/verifier/reward.txt or reward.json"
            in silent.metadata["reward_breakdown"]["error"]
        )
        good = await episode(env, "word-counts", solve)
        assert good.reward == 1.0, good.metadata


@pytest.mark.docker
@pytest.mark.timeout(300)
async def test_a_prebuilt_docker_image_is_used_and_a_missing_one_named(tmp_path: Path) -> None:
    base = docker_base()
    image = base.partition("=")[2] or "python:3.11-slim"
    for name, ref in (("prebuilt", image), ("prebuilt-missing", "openenv-test/no-such-image:0")):
        task = tmp_path / name
        (task / "tests").mkdir(parents=True)
        (task / "instruction.md").write_text("Write ok to /tmp/ok.\n")
        (task / "task.toml").write_text(f'[environment]\ndocker_image = "{ref}"\nworkdir = "/tmp"\n')
        (task / "tests" / "test.sh").write_text(
            '#!/bin/bash\n[ "$(cat /tmp/ok)" = ok ] && r=1 || r=0\necho $r > /logs/verifier/reward.txt\n'
        )
    async with task_env(tmp_path, base) as env:
        right = await episode(env, "prebuilt", "echo ok > ok")
        assert right.reward == 1.0, right.metadata
        with pytest.raises(
            ExecutionError, match="its docker_image 'openenv-test/no-such-image:0' is not on this engine"
        ):
            await env.reset(options={"task_id": "prebuilt-missing"})

"""The image checks of ``openenv validate --level static``, judged from the build recipe
(Dockerfile, pyproject.toml): our envs pass each; a recipe with each flaw fails the
check meant for it, with the evidence and a fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv.authoring._levels import run_validation
from openenv.authoring._policy import CheckStatus, Level, Verdict
from openenv.containers._labels import oci_labels

from ._flawed import OUT_OF_RANGE, make_env

REPO = Path(__file__).resolve().parents[2]
IMAGE_IDS = (
    "static.reproducible_build",
    "static.image_hygiene",
    "static.sbom",
    "static.oci_labels",
    "static.dependency_pinning",
)


@pytest.mark.parametrize(
    "env", ["echo_env", "arith_env", "coding_env", "reasoning_gym_env", "terminal_env", "browser_env"]
)
def test_our_recipes_pass_every_image_check(env):
    report = run_validation(REPO / "envs" / env, max_level=Level.STATIC)
    assert report.verdict is Verdict.PASS, report.render()
    assert [r.check_id for r in report.results if r.status is not CheckStatus.PASS] == []
    assert report.get("static.oci_labels").measured["labels"] == oci_labels(REPO / "envs" / env)
    if env == "reasoning_gym_env":  # procedural: its generator's seed is pinned
        assert report.get("static.task_distribution_pinning").status is CheckStatus.PASS


BAD_DOCKERFILE = """\
FROM python:latest
ENV API_TOKEN=abc123 MODE=fast
ADD app.py /app/
ADD https://example.com/data.tgz /data/
RUN apt-get update && apt-get install -y git
RUN pip install requests
LABEL org.opencontainers.image.version=9.9
"""


def test_each_flaw_of_a_recipe_fails_its_check(tmp_path):
    folder = make_env(tmp_path, OUT_OF_RANGE)
    (folder / "Dockerfile").write_text(BAD_DOCKERFILE)
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "flawed-env"\nversion = "0.1.0"\n'
        'dependencies = ["openenv", "requests>=2", "numpy==2.1.0", "tool @ https://example.com/tool.whl"]\n'
        '[project.entry-points."openenv.envs"]\nflawed_env = "flawed_env:Env"\n'
    )
    report = run_validation(folder, max_level=Level.STATIC)
    expected = {
        "static.reproducible_build": [
            "FROM python:latest: a moving tag (pin a version or a digest)",
            "ADD https://example.com/data.tgz /data/: fetches a URL at build time",
            "RUN ...apt-get update...: fetches from the network at build time",
            "RUN ...apt-get install...: fetches from the network at build time",
            "RUN pip install requests: pip install without --no-index reaches an index",
        ],
        "static.image_hygiene": [
            "ENV API_TOKEN=...: a secret baked into the image",
            "ADD app.py /app/: use COPY for local files",
            "RUN apt-get update && apt-get install -y git...: apt lists kept in the image "
            "(rm -rf /var/lib/apt/lists/*)",
            "RUN pip install requests...: pip keeps its cache in the image (--no-cache-dir)",
        ],
        "static.sbom": [
            "dependency 'tool @ https://example.com/tool.whl' is a URL: no version states what it is"
        ],
        "static.oci_labels": [
            "no org.opencontainers.image.description: give [project] a description",
            "LABEL org.opencontainers.image.version='9.9' contradicts the build's '0.1.0'",
        ],
        "static.dependency_pinning": ["unbounded: requests>=2"],
    }
    for check_id, evidence in expected.items():
        result = report.get(check_id)
        assert (result.status, result.evidence) == (CheckStatus.FAIL, evidence), check_id
        assert result.remediation, check_id
    assert report.verdict is Verdict.FAIL
    # openenv (the shared base's) and an exact pin need no bound of their own
    assert report.get("static.dependency_pinning").measured["dependencies"] == [
        "requests>=2",
        "numpy==2.1.0",
        "tool",
    ]


def test_a_multi_stage_recipe_names_its_stages_not_images(tmp_path):
    folder = make_env(tmp_path, OUT_OF_RANGE)
    (folder / "Dockerfile").write_text(
        "FROM python:3.11-slim AS build\nRUN echo hi\nFROM build AS test\nFROM scratch\n"
        "COPY --from=build /x /x\n"
    )
    result = run_validation(folder, max_level=Level.STATIC).get("static.reproducible_build")
    assert result.status is CheckStatus.PASS, result.evidence
    assert result.measured["bases"] == ["python:3.11-slim", "build", "scratch"]


def test_a_folder_without_a_recipe_fails_the_image_checks(tmp_path):
    folder = make_env(tmp_path, OUT_OF_RANGE)
    (folder / "Dockerfile").unlink()
    report = run_validation(folder, max_level=Level.STATIC)
    for check_id in IMAGE_IDS:
        result = report.get(check_id)
        assert result.status is CheckStatus.FAIL
        assert result.evidence == ["no build recipe to judge the image by: no Dockerfile"]

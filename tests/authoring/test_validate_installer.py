"""``static.reproducible_build`` and ``static.image_hygiene`` of a Dockerfile that installs
its context with the base image's ``openenv-install-env``: the script is judged with the
Dockerfile (a flaw inside it fails the checks, naming it), its ``--apt`` list must be what
``[tool.openenv.build] apt`` makes ``openenv build`` fetch, and a fetch behind a variable
assignment, ``env`` or a full path is still a fetch."""

from __future__ import annotations

from pathlib import Path

import pytest

import openenv.containers._build as build
from openenv.authoring._levels import run_validation
from openenv.authoring._policy import CheckStatus, Level

from ._flawed import OUT_OF_RANGE, make_env

REPO = Path(__file__).resolve().parents[2]
INSTALLING = """\
ARG OPENENV_BASE=openenv-base:latest
FROM ${OPENENV_BASE}
COPY . /tmp/ctx/
RUN openenv-install-env %s /tmp/ctx && git --version
"""


def _folder(tmp_path: Path, dockerfile: str, apt: list[str] | None = None) -> Path:
    folder = make_env(tmp_path, OUT_OF_RANGE)
    (folder / "Dockerfile").write_text(dockerfile)
    table = f"[tool.openenv.build]\napt = {apt!r}\n".replace("'", '"') if apt is not None else ""
    (folder / "pyproject.toml").write_text(
        '[project]\nname = "flawed-env"\nversion = "0.1.0"\ndescription = "d"\ndependencies = ["openenv"]\n'
        '[project.entry-points."openenv.envs"]\nflawed_env = "flawed_env:Env"\n' + table
    )
    return folder


def _image_checks(folder: Path) -> dict[str, tuple[CheckStatus, list[str]]]:
    report = run_validation(folder, max_level=Level.STATIC)
    return {
        cid: (report.get(cid).status, report.get(cid).evidence)
        for cid in ("static.reproducible_build", "static.image_hygiene")
    }


def test_the_installer_is_judged_with_the_dockerfile(tmp_path, monkeypatch):
    folder = _folder(tmp_path, INSTALLING % '--apt "git"', apt=["git"])
    checks = _image_checks(folder)
    assert checks["static.reproducible_build"][0] is CheckStatus.PASS, checks
    assert (
        "openenv-install-env (docker/openenv-install-env) judged with them, --apt git"
        in (checks["static.reproducible_build"][1][0])
    )
    # the same Dockerfile, the script it calls now fetching and keeping caches
    flawed = tmp_path / "flawed-installer"
    flawed.write_text(
        "#!/bin/sh\n# a comment: apt-get update\nset -eu\n"
        "apt-get update && \\\n  apt-get install -y git\npip install --no-index /tmp/ctx/*.whl\n"
    )
    monkeypatch.setattr(build, "INSTALLER", str(flawed))
    checks = _image_checks(folder)
    where = str(flawed)
    assert checks["static.reproducible_build"] == (
        CheckStatus.FAIL,
        [
            f"{where}: RUN ...apt-get update...: fetches from the network at build time",
            f"{where}: RUN ...apt-get install...: fetches from the network at build time",
        ],
    )
    status, evidence = checks["static.image_hygiene"]
    assert status is CheckStatus.FAIL
    assert [e.split(": RUN ")[0] for e in evidence] == [where, where]
    assert [e.rsplit(": ", 1)[1] for e in evidence] == [
        "pip keeps its cache in the image (--no-cache-dir)",
        "apt lists kept in the image (rm -rf /var/lib/apt/lists/*)",
    ]
    monkeypatch.setattr(build, "INSTALLER", str(tmp_path / "gone"))
    assert checks != _image_checks(folder)
    assert _image_checks(folder)["static.reproducible_build"] == (
        CheckStatus.FAIL,
        [f"RUN openenv-install-env: the script it runs ({tmp_path / 'gone'}) is not here to judge"],
    )


@pytest.mark.parametrize(
    ("option", "apt", "evidence"),
    [
        (
            '--apt "git curl"',
            ["git"],
            "RUN openenv-install-env --apt git curl: [tool.openenv.build] apt brings git "
            "(what openenv build fetches into debs/)",
        ),
        (
            "",
            ["git"],
            "RUN openenv-install-env --apt (none): [tool.openenv.build] apt brings git "
            "(what openenv build fetches into debs/)",
        ),
        (
            '--apt "git"',
            None,
            "RUN openenv-install-env --apt git: [tool.openenv.build] apt brings nothing "
            "(what openenv build fetches into debs/)",
        ),
        (
            "--pip-index https://x",
            None,
            "RUN openenv-install-env --pip-index https://x /tmp/ctx: openenv-install-env takes "
            "--no-deps, --apt LIST and one folder",
        ),
    ],
)
def test_the_apt_list_is_what_openenv_build_fetches(tmp_path, option, apt, evidence):
    checks = _image_checks(_folder(tmp_path, INSTALLING % option, apt=apt))
    assert checks["static.reproducible_build"] == (CheckStatus.FAIL, [evidence])


def test_a_fetch_behind_an_assignment_env_or_a_path_is_a_fetch(tmp_path):
    folder = _folder(
        tmp_path,
        "FROM python:3.11-slim\n"
        "RUN DEBIAN_FRONTEND=noninteractive apt-get update -q && rm -rf /var/lib/apt/lists/*\n"
        "RUN env HTTPS_PROXY= /usr/bin/curl -fsSLo /x https://example.com/x\n",
    )
    assert _image_checks(folder)["static.reproducible_build"] == (
        CheckStatus.FAIL,
        [
            "RUN ...apt-get update...: fetches from the network at build time",
            "RUN ...curl...: fetches from the network at build time",
        ],
    )


@pytest.mark.parametrize("env", ["terminal_env", "browser_env"])
def test_the_envs_with_debian_packages_pass(env):
    """They used to fall back to ``apt-get update && apt-get install`` without debs/."""
    checks = _image_checks(REPO / "envs" / env)
    assert {cid: status for cid, (status, _) in checks.items()} == {
        "static.reproducible_build": CheckStatus.PASS,
        "static.image_hygiene": CheckStatus.PASS,
    }, checks

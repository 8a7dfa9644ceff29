"""STATIC checks of the image, judged from its build recipe (the folder's Dockerfile and
pyproject.toml: ``--level`` serves the folder and builds no image).

``openenv build`` makes the image from exactly these: the env's wheels and its
dependencies' wheels built on the host, a Dockerfile whose ``RUN`` steps install them
with no network (the build runs with ``network_mode="none"``), ``FROM`` the shared base
it names by a build argument, and the OCI labels of ``openenv.containers._labels``.

- ``static.reproducible_build``: no step fetches anything (no package manager or
  downloader reaching out, no ``ADD`` of a URL, every ``pip install`` ``--no-index``),
  and the base is pinned (a build argument the builder sets, a digest, or a tag other
  than ``latest``). A ``RUN openenv-install-env`` (the base image's installer, from
  ``docker/openenv-install-env``) is judged by that script's own commands, and its
  ``--apt`` list must be exactly what ``[tool.openenv.build] apt`` makes ``openenv build``
  fetch: the script stops a build whose context lacks them rather than fetch them.
- ``static.image_hygiene``: no secret in ``ENV``/``ARG``/``LABEL``, no pip cache kept,
  no apt lists kept, ``COPY`` rather than ``ADD`` for local files (the installer's
  commands judged as well).
- ``static.sbom``: the bill of materials can be written: the env's name and version,
  and every dependency a PEP 508 requirement naming a distribution (no bare URL or
  path, whose version nothing states); ``measured`` holds it.
- ``static.oci_labels``: the title, version and description labels the build stamps are
  all there, and no ``LABEL`` in the Dockerfile contradicts them.
- ``static.dependency_pinning``: every dependency the build fetches is bounded (``==``,
  ``~=``, or an upper bound); ``openenv`` itself comes from the shared base, built from
  the building openenv's own sources.
"""

from __future__ import annotations

import re
import shlex
import tomllib
from pathlib import Path
from typing import Any

from .._exceptions import ProviderError
from ._policy import CheckStatus
from ._vreport import Results

_FETCHERS = re.compile(
    r"^(curl|wget|git\s+clone|apt-get\s+(update|install)|apt\s+(update|install)|apk\s+add|yum\s+install|"
    r"dnf\s+install|npm\s+(install|ci)|conda\s+install|go\s+get)\b"
)
_PIP = re.compile(r"\bpip3?\b[^;&|]*\binstall\b")
#: What a command is run through (``env``, ``sudo``) or with (``NAME=value``): not the command.
_PREFIX = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*=\S*|env|sudo|exec|command|nice|nohup)$")
INSTALLER = "openenv-install-env"
_SECRET = re.compile(r"(TOKEN|SECRET|PASSWORD|PASSWD|API_?KEY|PRIVATE_?KEY|CREDENTIAL)", re.I)


def instructions(dockerfile: str) -> list[tuple[str, str]]:
    """``(INSTRUCTION, arguments)`` per instruction: continuations joined, comments out."""
    out: list[tuple[str, str]] = []
    buf = ""
    for raw in dockerfile.splitlines():
        line = raw.strip()
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue
        if line.endswith("\\"):
            buf += line[:-1] + " "
            continue
        buf += line
        head, _, rest = buf.strip().partition(" ")
        out.append((head.upper(), rest.strip()))
        buf = ""
    if buf.strip():
        head, _, rest = buf.strip().partition(" ")
        out.append((head.upper(), rest.strip()))
    return out


def _project(folder: Path) -> dict[str, Any] | str:
    path = folder / "pyproject.toml"
    if not path.is_file():
        return "no pyproject.toml"
    try:
        data = tomllib.loads(path.read_text())
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        return f"pyproject.toml does not parse: {exc}"
    return dict(data.get("project") or {}) | {"_tool": data.get("tool", {}).get("openenv", {})}


def _recipe(folder: Path) -> tuple[str | None, dict[str, Any] | str]:
    """(the Dockerfile ``openenv build`` uses, the ``[project]`` table with the
    dependencies it installs). An upstream OpenEnv folder (``server/app.py``) is built
    from a generated Dockerfile and its own requirements (``containers._build_upstream``)."""
    from ..containers._build_upstream import _DOCKERFILE, is_upstream_folder, upstream_requirements

    if is_upstream_folder(folder):
        project = _project(folder)
        project = {} if isinstance(project, str) else project
        project.setdefault("_tool", {})
        project["dependencies"] = upstream_requirements(folder)
        return _DOCKERFILE.format(folder=folder.name), project
    dockerfile = folder / "Dockerfile"
    text = dockerfile.read_text(errors="replace") if dockerfile.is_file() else None
    return text, _project(folder)


def _base_problems(steps: list[tuple[str, str]]) -> tuple[list[str], list[str]]:
    args = {}
    for op, rest in steps:
        if op == "ARG":
            name, _, default = rest.partition("=")
            args[name.strip()] = default.strip()
    bases, problems, stages = [], [], {"scratch"}
    for op, rest in steps:
        if op != "FROM":
            continue
        words = [w for w in rest.split() if not w.startswith("--")]
        image = words[0] if words else ""
        if len(words) >= 3 and words[1].lower() == "as":
            stages.add(words[2].lower())  # a later FROM of this name is this stage, not an image
        bases.append(image)
        if image.lower() in stages - {words[2].lower() if len(words) >= 3 else ""}:
            continue
        if image.startswith("$"):
            name = image.strip("${}")
            if name not in args:
                problems.append(f"FROM {image}: no ARG {name} declares it")
        elif "@sha256:" in image:
            continue
        elif ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest"):
            problems.append(f"FROM {image}: a moving tag (pin a version or a digest)")
    return bases, problems


def _fetch_problems(steps: list[tuple[str, str]]) -> list[str]:
    problems = []
    for op, rest in steps:
        if op == "ADD" and re.search(r"\b(https?|ftp)://", rest):
            problems.append(f"ADD {rest[:80]}: fetches a URL at build time")
        if op != "RUN":
            continue
        for command in re.split(r"&&|\|\||[;|]|\bthen\b|\belse\b|\bdo\b", rest):
            words = command.strip().split()
            while words and _PREFIX.match(words[0]):
                words.pop(0)
            if words:
                words[0] = words[0].rsplit("/", 1)[-1]  # /usr/bin/apt-get is apt-get
            match = _FETCHERS.match(" ".join(words))
            local = [w for w in words[2:] if not w.startswith("-")]
            if match and not (
                match.group(1).endswith("install") and local and all(w.endswith(".deb") for w in local)
            ):
                problems.append(f"RUN ...{match.group(1)}...: fetches from the network at build time")
        if _PIP.search(rest) and "--no-index" not in rest:
            problems.append(f"RUN {rest[:80]}: pip install without --no-index reaches an index")
    return problems


def _requirements(project: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    from packaging.requirements import InvalidRequirement, Requirement

    parts, problems = [], []
    for text in project.get("dependencies") or []:
        try:
            req = Requirement(str(text))
        except InvalidRequirement as exc:
            problems.append(f"dependency {text!r} is not a PEP 508 requirement: {exc}")
            continue
        if req.url:
            problems.append(f"dependency {text!r} is a URL: no version states what it is")
        parts.append(
            {"name": req.name, "specifier": str(req.specifier), "extras": sorted(req.extras), "url": req.url}
        )
    return parts, problems


def _bounded(specifier: str) -> bool:
    ops = re.findall(r"(===|==|~=|<=|<|>=|>|!=)", specifier)
    return any(op in ("==", "===", "~=", "<", "<=") for op in ops)


def run_recipe(folder: Path, results: Results) -> None:
    """The five image ids, each a PASS or FAIL from the recipe."""
    results.start()
    text, project = _recipe(folder)
    if text is None or isinstance(project, str):
        why = "no Dockerfile" if text is None else str(project)
        for check_id in (
            "static.reproducible_build",
            "static.image_hygiene",
            "static.sbom",
            "static.oci_labels",
            "static.dependency_pinning",
        ):
            results.add(
                check_id,
                CheckStatus.FAIL,
                f"no build recipe to judge the image by: {why}",
                remediation="give the folder a Dockerfile and a pyproject.toml (openenv init makes both)",
            )
        return
    steps = instructions(text)
    installer = _installer(steps, project)
    _reproducible(steps, installer, results)
    _hygiene(steps, installer, results)
    _sbom(project, results)
    _labels(folder, steps, results)
    _pinning(project, results)


class _Installer:
    """The RUN steps that call the base image's ``openenv-install-env``, and that script's
    commands as one ``RUN`` (``None`` when it cannot be read): judged with the Dockerfile."""

    def __init__(self, calls: list[str], script: str | None, where: str, apt: list[str]) -> None:
        self.calls, self.script, self.where, self.apt = calls, script, where, apt

    def steps(self) -> list[tuple[str, str]]:
        return [("RUN", self.script)] if self.calls and self.script is not None else []

    def problems(self) -> list[str]:
        """The script missing, or an ``--apt`` that is not what ``openenv build`` fetches."""
        if not self.calls:
            return []
        if self.script is None:
            return [f"RUN {INSTALLER}: the script it runs ({self.where}) is not here to judge"]
        out = []
        for call in self.calls:
            named = _apt_option(call)
            if named is None:
                out.append(f"RUN {call[:80]}: {INSTALLER} takes --no-deps, --apt LIST and one folder")
            elif sorted(named) != sorted(self.apt):
                out.append(
                    f"RUN {INSTALLER} --apt {' '.join(named) or '(none)'}: [tool.openenv.build] apt "
                    f"brings {' '.join(self.apt) or 'nothing'} (what openenv build fetches into debs/)"
                )
        return out


def _installer(steps: list[tuple[str, str]], project: dict[str, Any]) -> _Installer:
    from ..containers._build import INSTALLER as PATH
    from ..containers._build import source_root

    calls = []
    for op, rest in steps:
        if op != "RUN":
            continue
        for command in re.split(r"&&|\|\||;", rest):
            words = command.split()
            if words and words[0].rsplit("/", 1)[-1] == INSTALLER:
                calls.append(command.strip())
    apt = project["_tool"].get("build", {}).get("apt", [])
    apt = [str(a) for a in apt] if isinstance(apt, list) else []
    try:
        text: str | None = (source_root() / PATH).read_text()
    except (OSError, ProviderError):
        text = None
    if text is not None:  # one RUN: comments out, continuations joined, a command a line
        lines = [line for line in text.splitlines() if not line.strip().startswith("#")]
        text = "; ".join(_joined(lines))
    return _Installer(calls, text, PATH, apt)


def _joined(lines: list[str]) -> list[str]:
    out, buf = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            buf += line.rstrip()[:-1] + " "
            continue
        out.append((buf + line).strip())
        buf = ""
    return [c for c in [*out, buf.strip()] if c]


def _apt_option(call: str) -> list[str] | None:
    """The packages ``openenv-install-env ... --apt "A B" ...`` names; None if unparsable."""
    try:
        words = shlex.split(call)[1:]
    except ValueError:
        return None
    named: list[str] = []
    while words and words[0].startswith("-"):
        flag = words.pop(0)
        if flag == "--apt" and words:
            named = words.pop(0).split()
        elif flag != "--no-deps":
            return None
    return named if len(words) <= 1 else None


def _reproducible(steps: list[tuple[str, str]], installer: _Installer, results: Results) -> None:
    bases, problems = _base_problems(steps)
    problems += _fetch_problems(steps)
    problems += [f"{installer.where}: {p}" for p in _fetch_problems(installer.steps())]
    problems += installer.problems()
    runs = sum(1 for op, _ in steps if op == "RUN")
    judged = (
        f"; {INSTALLER} ({installer.where}) judged with them"
        + (f", --apt {' '.join(installer.apt)} as [tool.openenv.build] apt" if installer.apt else "")
        if installer.calls
        else ""
    )
    results.add(
        "static.reproducible_build",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems
        or [
            f"FROM {', '.join(bases)} (pinned); {runs} RUN step(s) fetch nothing (no index, no download)"
            + judged
        ],
        remediation="install only what the build context brings (pip install --no-index --find-links; "
        ".deb files that [tool.openenv.build] apt makes openenv build fetch), "
        "and pin the base by a version tag or digest",
        measured={
            "bases": bases,
            "run_steps": runs,
            "installer": installer.where if installer.calls else None,
        },
    )


def _hygiene(steps: list[tuple[str, str]], installer: _Installer, results: Results) -> None:
    problems = [f"{installer.where}: {p}" for p in _hygiene_problems(installer.steps())[0]]
    found, user = _hygiene_problems(steps)
    problems = found + problems
    results.add(
        "static.image_hygiene",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [f"no secrets, no package caches, COPY for local files; runs as {user}"],
        remediation="keep secrets out of the Dockerfile and clean package caches in the step that makes them",
        measured={"user": user},
    )


def _hygiene_problems(steps: list[tuple[str, str]]) -> tuple[list[str], str]:
    problems = []
    user = "root (no USER)"
    for op, rest in steps:
        if op in ("ENV", "ARG", "LABEL"):
            for word in shlex.split(rest, posix=True) if rest.count('"') % 2 == 0 else rest.split():
                name, eq, value = word.partition("=")
                if eq and value and _SECRET.search(name):
                    problems.append(f"{op} {name}=...: a secret baked into the image")
        if op == "ADD" and not re.search(r"\b(https?|ftp)://", rest):
            problems.append(f"ADD {rest[:60]}: use COPY for local files")
        if op == "RUN" and _PIP.search(rest) and "--no-cache-dir" not in rest:
            problems.append(f"RUN {rest[:60]}...: pip keeps its cache in the image (--no-cache-dir)")
        if (
            op == "RUN"
            and re.search(r"apt-get\s+(update|install)", rest)
            and "/var/lib/apt/lists" not in rest
        ):
            problems.append(f"RUN {rest[:60]}...: apt lists kept in the image (rm -rf /var/lib/apt/lists/*)")
        if op == "USER":
            user = rest
    return problems, user


def _sbom(project: dict[str, Any], results: Results) -> None:
    parts, problems = _requirements(project)
    name, version = project.get("name"), project.get("version")
    if not name or not version:
        problems.insert(0, "pyproject.toml [project] has no name or no version for the env itself")
    components = [{"name": name, "version": version}, *parts]
    results.add(
        "static.sbom",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems
        or [f"{name} {version} and {len(parts)} dependency requirement(s), each a named distribution"],
        remediation="name every dependency as a PEP 508 requirement (name and version range), "
        "and give [project] a name and version",
        measured={"components": components, "apt": list(project["_tool"].get("build", {}).get("apt", []))},
    )


def _labels(folder: Path, steps: list[tuple[str, str]], results: Results) -> None:
    from ..containers._labels import KEYS, PREFIX, oci_labels

    labels = oci_labels(folder)
    problems = [
        f"no {PREFIX}{key}: give [project] a {field}"
        for key, field in KEYS.items()
        if PREFIX + key not in labels
    ]
    for op, rest in steps:
        if op != "LABEL":
            continue
        for word in shlex.split(rest) if rest.count('"') % 2 == 0 else rest.split():
            key, _, value = word.partition("=")
            if key in labels and value != labels[key]:
                problems.append(f"LABEL {key}={value!r} contradicts the build's {labels[key]!r}")
    results.add(
        "static.oci_labels",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or ["openenv build labels the image " + ", ".join(f"{k}={v!r}" for k, v in labels.items())],
        remediation="give pyproject.toml [project] a name, version and description",
        measured={"labels": labels},
    )


def _pinning(project: dict[str, Any], results: Results) -> None:
    parts, _ = _requirements(project)
    fetched = [p for p in parts if p["name"].lower() != "openenv"]
    loose = [f"{p['name']}{p['specifier']}" for p in fetched if not p["url"] and not _bounded(p["specifier"])]
    results.add(
        "static.dependency_pinning",
        CheckStatus.FAIL if loose else CheckStatus.PASS,
        [f"unbounded: {', '.join(loose)}"]
        if loose
        else [
            f"{len(fetched)} fetched dependency(ies) each bounded"
            + (f" ({', '.join(p['name'] + p['specifier'] for p in fetched)})" if fetched else "")
            + "; openenv comes from the shared base, built from the building openenv's sources"
        ],
        remediation="bound every dependency (==, ~= or an upper bound such as <3) so a rebuild "
        "cannot pull a newer major release",
        measured={"dependencies": [p["name"] + p["specifier"] for p in fetched]},
    )

"""``openenv catalog`` / ``openenv discover`` / ``openenv.catalog`` on a Git repository
made here: entries pinned to a commit, a broken env folder reported while the rest is
built, search, inspect, two catalogs compared, bad input as one line; and upstream
OpenEnv 0.10 (in .venv-upstream) building the same bytes and reading ours."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
from pathlib import Path

import pytest

from openenv.catalog import (
    CatalogError,
    build_catalog,
    compare_catalogs,
    load_catalog,
    read_catalog,
    resolve_entry,
    search_catalog,
    write_catalog,
)
from openenv.cli import main

REPO = Path(__file__).resolve().parents[2]
UPSTREAM_PY = REPO / ".venv-upstream" / "bin" / "python"
UPSTREAM_PKG = REPO / ".venv-upstream" / "lib" / "python3.11" / "site-packages" / "openenv" / "discovery"
URI = "https://github.com/acme/shelf.git"
PUB = "acme.example"

ALPHA = {
    "openenv.yaml": "spec_version: 1\nname: alpha_env\ntype: space\nruntime: fastapi\n"
    "app: server.app:app\nport: 8000\n",
    "pyproject.toml": '[project]\nname = "alpha"\ndescription = "Sort lists of integers in place."\n'
    'license = "mit"\ndependencies = ["openenv>=0.1", "numpy"]\n',
    "README.md": "---\ntags: [sorting, arrays]\n---\n# alpha\n",
}
BETA = {
    "openenv.yaml": "name: beta_env\ndescription: Play chess against a fixed engine.\n",
    "discovery.json": json.dumps(
        {
            "tags": ["games", "chess"],
            "representative_queries": ["play a board game", "chess opponent"],
            "license": "Apache-2.0",
            "agent_tools": {
                "protocol": "mcp",
                "names": ["move", "board"],
                "source": "envs/beta_env/tools.py",
            },
        }
    ),
    "tools.py": "TOOLS = ['move', 'board']\n",
}
GAMMA = {"openenv.yaml": "name: gamma_env\ndescription: Answer questions about a web page.\n"}
ROOT_FILES = {
    "pyproject.toml": '[project]\nname = "shelf"\nlicense = {text = "BSD-3-Clause"}\n'
    'license-files = ["LICENSE"]\n',
    "LICENSE": "BSD 3-Clause\n",
}
VALIDATION = (
    "validation:\n  reward: {range: [0.0, 1.0], floor_margin: 0.1}\n"
    "  resources: {cpu: 1, memory_mb: 256, disk_mb: 64, episode_timeout_s: 60}\n"
    "  capabilities: {verifier: {kind: reward_channel}}\n  types: {tags: [puzzle]}\n"
)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _commit(repo: Path, message: str) -> str:
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", message], check=True)
    return subprocess.run(
        [*git, "rev-parse", "HEAD"], check=True, capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture(scope="module")
def shelf(tmp_path_factory: pytest.TempPathFactory) -> dict[str, object]:
    """Three commits: (1) three sound envs; (2) alpha changed, two broken envs added, a
    validation block on gamma, and an uncommitted file; (3) the broken ones gone."""
    repo = tmp_path_factory.mktemp("shelf")
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    _write(repo, ROOT_FILES)
    for name, files in (("alpha_env", ALPHA), ("beta_env", BETA), ("gamma_env", GAMMA)):
        _write(repo / "envs" / name, files)
    first = _commit(repo, "three envs")
    _write(
        repo / "envs" / "alpha_env", {"openenv.yaml": ALPHA["openenv.yaml"] + "description: Sort, faster.\n"}
    )
    _write(repo / "envs" / "gamma_env", {"openenv.yaml": GAMMA["openenv.yaml"] + VALIDATION})
    _write(
        repo / "envs" / "typo_env",
        {"openenv.yaml": "name: typo_env\ndescription: d\n" + VALIDATION.replace("range", "rnage")},
    )
    _write(repo / "envs" / "mute_env", {"openenv.yaml": "name: mute_env\n"})
    _write(
        repo / "envs" / "tag_env",
        {"openenv.yaml": "name: tag_env\ndescription: d\n", "README.md": "---\ntags: [ok, '']\n---\n"},
    )
    second = _commit(repo, "broken envs")
    for name in ("typo_env", "mute_env", "tag_env"):
        for f in (repo / "envs" / name).iterdir():
            f.unlink()
        (repo / "envs" / name).rmdir()
    third = _commit(repo, "broken envs removed")
    _write(repo / "envs" / "late_env", {"openenv.yaml": "name: late_env\ndescription: never committed\n"})
    return {"repo": repo, "first": first, "second": second, "third": third}


def _build(shelf: dict[str, object], revision: str) -> object:
    return build_catalog(shelf["repo"], repository_uri=URI, publisher=PUB, revision=revision)  # type: ignore[arg-type]


def test_entries_are_pinned_to_one_commit_and_read_from_it(shelf):
    snap = _build(shelf, shelf["first"])
    assert snap.complete
    assert snap.issues == []
    assert [e.data.source.path for e in snap.entries] == ["envs/alpha_env", "envs/beta_env", "envs/gamma_env"]
    for e in snap.entries:
        assert e.identifier.startswith(f"urn:air:{PUB}:openenv:")
        assert e.identifier.endswith(":" + shelf["first"])
        assert e.data.source.revision == shelf["first"] == e.data.artifacts[0].revision
    alpha, beta, gamma = snap.entries
    assert (alpha.description, alpha.data.license, alpha.tags) == (
        "Sort lists of integers in place.",
        "MIT",
        ["arrays", "sorting"],
    )
    assert alpha.data.framework_requirement == "openenv>=0.1"
    assert (
        alpha.data.license_url
        == f"https://github.com/acme/shelf/blob/{shelf['first']}/envs/alpha_env/pyproject.toml"
    )
    assert (beta.capabilities, beta.data.interfaces[1].role, beta.data.license) == (
        ["move", "board"],
        "agent-tools",
        "Apache-2.0",
    )
    assert (gamma.data.license, gamma.metadata["provenance"]["license"]) == ("BSD-3-Clause", "LICENSE")
    # HEAD: late_env is in the work tree only, so not in the catalog
    head = _build(shelf, "HEAD")
    assert head.source.revision == shelf["third"]
    assert "envs/late_env" not in head.inventory.paths


def test_a_broken_env_is_reported_and_the_rest_built(shelf, tmp_path, capsys):
    out = tmp_path / "c.json"
    argv = [
        "catalog",
        "build",
        "--repository",
        str(shelf["repo"]),
        "--repository-uri",
        URI,
        "--publisher",
        PUB,
        "--revision",
        shelf["second"],
        "--output",
        str(out),
    ]
    assert main(argv) == 1
    printed = capsys.readouterr().out
    assert "3 entries" in printed
    assert "3 env folder(s) failed" in printed
    assert "error: envs/typo_env: openenv.yaml (typo_env): validation.reward.rnage: unknown key" in printed
    assert "error: envs/mute_env: Environment needs an authored task description" in printed
    assert (
        "error: envs/tag_env: Metadata does not satisfy the declaration profile: "
        "tags.0: String should have at least 1 character" in printed
    )
    snap = read_catalog(out)  # written, and says it is incomplete
    assert not snap.complete
    assert {i.path for i in snap.issues} == {"envs/typo_env", "envs/mute_env", "envs/tag_env"}
    gamma = next(e for e in snap.entries if e.display_name == "gamma_env")
    assert gamma.metadata["validation"]["reward"]["range"] == [0.0, 1.0]  # our manifest's block, parsed
    with pytest.raises(
        CatalogError, match=r"incomplete \(no entry for envs/mute_env, envs/tag_env, envs/typo_env"
    ):
        load_catalog(out)
    assert main(["discover", "chess", "--catalog", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("openenv discover: The configured catalog is incomplete")


def test_search_inspect_and_filters(shelf, tmp_path, capsys):
    snap = _build(shelf, shelf["first"])
    path = tmp_path / "c.json"
    write_catalog(snap, path)
    hits = search_catalog(snap, "chess puzzles")
    assert [(m.entry.display_name, m.score) for m in hits] == [("beta_env", 50)]  # one word of two
    assert [m.entry.display_name for m in search_catalog(snap, "board game")] == [
        "beta_env"
    ]  # its example queries
    assert [m.entry.display_name for m in search_catalog(snap, "", filters={"license": "MIT"})] == [
        "alpha_env"
    ]
    assert search_catalog(snap, "sort", filters={"tags": "games"}) == []
    with pytest.raises(CatalogError, match="Unsupported filter: owner"):
        search_catalog(snap, "x", filters={"owner": "acme"})
    assert main(["discover", "sort integers", "--catalog", str(path)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("alpha_env (100): Sort lists of integers in place.\n")
    assert f"envs/alpha_env @ {shelf['first']}" in out
    assert "1 match(es)." in out
    assert main(["discover", "--catalog", str(path), "--json", "--filter", "name=gamma_env"]) == 0
    found = json.loads(capsys.readouterr().out)
    assert [r["displayName"] for r in found["results"]] == ["gamma_env"]
    assert found["snapshot"] == snap.digest
    ident = snap.entries[1].identifier
    assert main(["catalog", "inspect", ident, "--catalog", str(path)]) == 0
    assert json.loads(capsys.readouterr().out)["identifier"] == ident == resolve_entry(snap, ident).identifier
    assert main(["catalog", "inspect", ident[:-1], "--catalog", str(path)]) == 2
    assert "Entry not found" in capsys.readouterr().err


def test_two_catalogs_compared(shelf, tmp_path, capsys):
    one, three = _build(shelf, shelf["first"]), _build(shelf, shelf["third"])
    changes = compare_catalogs(one, three)
    assert [s.current.data.source.path for s in changes.superseded] == [
        e.data.source.path for e in one.entries
    ]
    assert changes.added == changes.withdrawn == changes.corrected == []
    changes = compare_catalogs(one, one)
    assert changes.superseded == changes.corrected == []
    write_catalog(one, tmp_path / "1.json")
    write_catalog(three, tmp_path / "3.json")
    assert main(["catalog", "diff", str(tmp_path / "1.json"), str(tmp_path / "3.json")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == f"superseded envs/alpha_env @ {shelf['first'][:12]} -> {shelf['third'][:12]}"
    assert len(lines) == 3
    other = build_catalog(shelf["repo"], repository_uri="https://github.com/acme/other.git", publisher=PUB)
    with pytest.raises(CatalogError, match="preserve publisher and inventory scope"):
        compare_catalogs(one, other)


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"--revision": "no-such-branch"}, "no commit 'no-such-branch'"),
        ({"--revision": "0" * 40}, "no commit '0000000000000000000000000000000000000000'"),
        ({"--repository-uri": "https://gitlab.com/a/b.git"}, "credential-free GitHub HTTPS Git URI"),
        ({"--publisher": "acme"}, "publisher 'acme' must be a DNS name"),
        ({"--root": "../envs"}, "normalized repository-relative POSIX path"),
        ({"--root": "missing"}, "no folder 'missing'"),
        ({"--namespace": "a:b"}, "namespace 'a:b'"),
        ({"--repository": "/nonexistent/x"}, "/nonexistent/x is not a folder"),
    ],
)
def test_bad_input_is_one_line(shelf, tmp_path, capsys, change, expected):
    opts = {
        "--repository": str(shelf["repo"]),
        "--repository-uri": URI,
        "--publisher": PUB,
        "--output": str(tmp_path / "c.json"),
        **change,
    }
    assert main(["catalog", "build", *[x for kv in opts.items() for x in kv]]) == 2
    err = capsys.readouterr().err
    assert err.startswith("openenv catalog build: "), err
    assert err.count("\n") == 1, err
    assert expected in err, err
    assert not (tmp_path / "c.json").exists()


def test_a_tampered_or_malformed_catalog_is_refused(shelf, tmp_path):
    snap = _build(shelf, shelf["first"])
    path = tmp_path / "c.json"
    write_catalog(snap, path)
    data = json.loads(path.read_text())
    data["entries"][0]["description"] = "Something else."
    path.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match="does not match its snapshot digest"):
        load_catalog(path)
    path.write_text(path.read_text().replace('"complete": true', '"complete": true, "complete": true'))
    with pytest.raises(CatalogError, match="repeats the key 'complete'"):
        load_catalog(path)
    data["entries"][0]["identifier"] = "urn:air:acme.example:openenv:x:main"
    path.write_text(json.dumps(data))
    with pytest.raises(CatalogError, match="identifier must name one immutable revision card"):
        load_catalog(path)


# --- against upstream OpenEnv 0.10 ------------------------------------------------------

_UPSTREAM = """
import json, sys
from openenv.discovery import build_catalog, load_catalog, write_catalog
repo, uri, pub, rev, out, ours = sys.argv[1:7]
write_catalog(build_catalog(repo, repository_uri=uri, publisher=pub, revision=rev), out)
import openenv.discovery as d
print(json.dumps({"loaded": len(load_catalog(ours).entries), "all": d.__all__}))
"""


@pytest.fixture(scope="module")
def upstream(shelf, tmp_path_factory):
    if not (UPSTREAM_PY.is_file() and UPSTREAM_PKG.is_dir()):
        pytest.skip(
            f"upstream OpenEnv 0.10 is not installed: {UPSTREAM_PKG} is missing "
            "(`bash scripts/side_venvs.sh upstream` makes it)"
        )
    where = tmp_path_factory.mktemp("upstream")
    ours = where / "ours-with-validation.json"
    write_catalog(_build(shelf, shelf["third"]), ours)  # gamma declares a validation block here
    done = subprocess.run(
        [
            str(UPSTREAM_PY),
            "-I",
            "-c",
            _UPSTREAM,
            str(shelf["repo"]),
            URI,
            PUB,
            shelf["first"],
            str(where / "theirs.json"),
            str(ours),
        ],
        cwd="/",
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return {"theirs": where / "theirs.json", **json.loads(done.stdout)}


def test_upstream_builds_the_same_bytes(shelf, upstream, tmp_path):
    write_catalog(_build(shelf, shelf["first"]), tmp_path / "ours.json")
    assert (tmp_path / "ours.json").read_bytes() == upstream["theirs"].read_bytes()
    assert load_catalog(upstream["theirs"]).digest == load_catalog(tmp_path / "ours.json").digest


def test_upstream_reads_ours_with_our_additions(upstream):
    assert upstream["loaded"] == 3


def _upstream_names(module: Path) -> set[str]:
    """What an upstream discovery module defines itself (what it imports, from its
    siblings or elsewhere, is checked where it is defined; the package's own names are
    its ``__all__``)."""
    names: set[str] = set()
    for node in ast.parse(module.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {t.id for t in targets if isinstance(t, ast.Name)}
    return {n for n in names if not n.startswith("_") and n != "__all__"}


def test_every_upstream_discovery_name_is_ours(upstream):
    for module in sorted(UPSTREAM_PKG.glob("*.py")):
        dotted = "" if module.stem == "__init__" else "." + module.stem
        ours = importlib.import_module("openenv.discovery" + dotted)
        missing = sorted(n for n in _upstream_names(module) if not hasattr(ours, n))
        assert missing == [], f"openenv.discovery{dotted} lacks {missing}"
    top = importlib.import_module("openenv.discovery")
    assert top.build_catalog is build_catalog
    assert top.CatalogError is CatalogError
    assert sorted(top.__all__) == sorted(upstream["all"])


def test_this_repository_catalogs_completely():
    """Every env folder of this repository at HEAD has an entry, with its validation block."""
    if not (REPO / ".git").exists():
        pytest.skip(f"{REPO} is not a Git checkout")
    snap = build_catalog(REPO, repository_uri="https://github.com/example/openenv.git", publisher=PUB)
    assert snap.complete, snap.issues
    names = {e.display_name for e in snap.entries}
    shipped = {"echo_env", "coding_env", "terminal_env", "browser_env", "arith_env", "reasoning_gym_env"}
    assert shipped <= names
    assert all("validation" in e.metadata for e in snap.entries), [
        e.display_name for e in snap.entries if "validation" not in e.metadata
    ]


def _without(schema: object, keys: frozenset[str]) -> object:
    if isinstance(schema, dict):
        return {k: _without(v, keys) for k, v in schema.items() if k not in keys}
    if isinstance(schema, list):
        return [_without(v, keys) for v in schema]
    return schema


def _patterns(schema: object) -> list[str]:
    if isinstance(schema, dict):
        own = [schema["pattern"]] if isinstance(schema.get("pattern"), str) else []
        return own + [p for v in schema.values() for p in _patterns(v)]
    if isinstance(schema, list):
        return [p for v in schema for p in _patterns(v)]
    return []


@pytest.mark.parametrize(
    ("name", "model"),
    [
        ("catalog", "CatalogSnapshot"),
        ("environment-card", "EnvironmentCard"),
        ("declaration", "DiscoveryDeclaration"),
    ],
)
def test_our_json_schemas_are_upstreams(name, model):
    """The JSON Schemas upstream ships for the profile, from our models: the same but for
    prose and the path pattern, which is written differently and accepts the same paths."""
    import re

    import openenv.catalog

    shipped = UPSTREAM_PKG / "schemas" / "0.1-draft" / f"{name}.schema.json"
    if not shipped.is_file():
        pytest.skip(f"upstream OpenEnv 0.10 is not installed: {shipped} is missing")
    theirs = json.loads(shipped.read_text())
    ours = getattr(openenv.catalog, model).model_json_schema(by_alias=True)
    prose = frozenset({"description", "$comment", "$id", "$schema", "pattern"})
    assert _without(ours, prose) == _without(theirs, prose)
    paths = [
        ".",
        "a",
        ".a",
        "..a",
        "...",
        "a/b",
        "a.b/c..d",
        "",
        "..",
        "a/../b",
        "/a",
        "a\\b",
        "a/./b",
        "a//b",
        "a\x00b",
        "a/",
        "\u2028",
    ]
    mine, upstreams = (
        set(_patterns(ours)) - set(_patterns(theirs)),
        set(_patterns(theirs)) - set(_patterns(ours)),
    )
    assert (len(mine), len(upstreams)) == (1, 1)  # the path pattern, written two ways
    pattern, upstream_pattern = mine.pop(), upstreams.pop()
    ours_ok = [bool(re.search(pattern, p)) for p in paths]
    assert ours_ok == [bool(re.search(upstream_pattern, p)) for p in paths]
    assert ours_ok == [True] * 7 + [False] * 10

"""``openenv.yaml``: read, checked, written."""

from __future__ import annotations

from pathlib import Path

import pytest

from openenv.authoring import Manifest, ManifestError, load_manifest


def test_round_trip(tmp_path: Path):
    manifest = Manifest(name="maze", env="maze:MazeEnv", description="A maze.", tags=["games"])
    (tmp_path / "openenv.yaml").write_text(manifest.to_yaml())
    assert load_manifest(tmp_path) == manifest


def test_upstream_keys_are_accepted(tmp_path: Path):
    (tmp_path / "openenv.yaml").write_text(
        "spec_version: 1\nname: echo_env\nversion: 0.10\ntype: space\nruntime: fastapi\n"
        "app: server.app:app\nport: 8000\n"
    )
    manifest = load_manifest(tmp_path)
    assert (manifest.version, manifest.runtime, manifest.port, manifest.env) == ("0.1", "fastapi", 8000, "")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("- a list\n", "must hold a mapping"),
        ("name: [unclosed\n", "not valid YAML"),
        ("name: Bad Name\nenv: m:C\n", "must be a lowercase identifier"),
        ("name: ok\nenv: no_colon\n", "must be 'module:Class'"),
        ("name: ok\nenv: m:C\nport: 70000\n", "must be a TCP port"),
        ("name: ok\nenv: m:C\ndeterministic: maybe\n", "deterministic must be true or false"),
        ("name: ok\nenv: m:C\ntags: games\n", "tags must be a list of strings"),
    ],
)
def test_bad_manifests_say_why(tmp_path: Path, text: str, message: str):
    (tmp_path / "openenv.yaml").write_text(text)
    with pytest.raises(ManifestError, match=message):
        load_manifest(tmp_path)


def test_missing_manifest(tmp_path: Path):
    with pytest.raises(ManifestError, match="does not exist"):
        load_manifest(tmp_path)

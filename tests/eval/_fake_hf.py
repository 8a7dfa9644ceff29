"""A stand-in for ``huggingface_hub.HfApi`` (the Hub cannot be reached from tests)."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, ClassVar

import pytest


class FakeHfApi:
    """Records each call; ``upload_folder`` copies the folder to ``kept`` when that is set,
    and raises ``OSError(fail)`` when ``fail`` is."""

    calls: ClassVar[list[tuple[str, dict[str, Any]]]] = []
    kept: ClassVar[Path | None] = None
    fail: ClassVar[str | None] = None

    def __init__(self, token: str | None = None) -> None:
        pass

    def create_repo(self, **kwargs: Any) -> None:
        FakeHfApi.calls.append(("create_repo", kwargs))

    def upload_folder(self, **kwargs: Any) -> None:
        if FakeHfApi.fail:
            raise OSError(FakeHfApi.fail)
        if FakeHfApi.kept is not None:
            shutil.copytree(kwargs["folder_path"], FakeHfApi.kept)
        FakeHfApi.calls.append(("upload_folder", kwargs))


def fake_hf_api(monkeypatch: pytest.MonkeyPatch, kept: Path | None = None) -> type[FakeHfApi]:
    """``huggingface_hub.HfApi`` is ``FakeHfApi`` for this test, with no calls yet."""
    hub = pytest.importorskip("huggingface_hub", reason="the 'hub' extra brings huggingface_hub")
    monkeypatch.setattr(hub, "HfApi", FakeHfApi)
    monkeypatch.setattr(FakeHfApi, "calls", [])
    monkeypatch.setattr(FakeHfApi, "kept", kept)
    monkeypatch.setattr(FakeHfApi, "fail", None)
    return FakeHfApi

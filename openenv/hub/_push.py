"""``openenv push`` and ``openenv pull``: an env folder to and from a Hugging Face Space."""

from __future__ import annotations

import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from .._exceptions import HubError
from .._extras import require
from ._pin import split_pin
from ._stage import stage_space

_REPO_ID = re.compile(r"^[A-Za-z0-9][\w.-]{0,95}/[A-Za-z0-9][\w.-]{0,95}$")


@dataclass(slots=True)
class PushResult:
    """What ``push`` uploaded (or, for a dry run, would upload)."""

    repo_id: str
    files: list[str]
    url: str | None = None
    commit: str | None = None
    dry_run: bool = False
    private: bool = False
    notes: list[str] = field(default_factory=list)


def hf() -> ModuleType:
    return require("huggingface_hub", extra="hub", feature="openenv push/pull/from_hub")


def check_repo_id(repo_id: str) -> str:
    if not isinstance(repo_id, str) or not _REPO_ID.fullmatch(repo_id) or ".." in repo_id:
        raise HubError(f"{repo_id!r} is not a Hub repo id: use ORG/NAME")
    return repo_id


def resolve_token(token: str | None = None) -> str | None:
    """``token``, else ``HF_TOKEN`` / the token saved by ``hf auth login`` (``get_token``)."""
    return token or hf().get_token()


def _api(endpoint: str | None, token: str | None) -> Any:
    return hf().HfApi(endpoint=endpoint, token=token)


def _hub_call(what: str, fn: Any, *args: Any, endpoint: str | None = None, **kwargs: Any) -> Any:
    """Call the Hub; every way it can fail (refused, unreachable) is one-line ``HubError``."""
    import importlib

    hf()  # the hub extra, or one line naming it
    errors = importlib.import_module("huggingface_hub.errors")  # a submodule: not an attribute until imported
    try:
        return fn(*args, **kwargs) if endpoint is None else fn(*args, endpoint=endpoint, **kwargs)
    except errors.RevisionNotFoundError:  # an OSError too: before the unreachable ones
        raise HubError(f"{what} failed: the Space has no such revision") from None
    except _unreachable(errors) as exc:
        where = endpoint or importlib.import_module("huggingface_hub.constants").ENDPOINT
        raise HubError(f"{what} failed: cannot reach the Hub at {where} ({_first_line(exc)})") from None
    except (errors.HfHubHTTPError, errors.RepositoryNotFoundError) as exc:
        raise HubError(f"{what} failed: {_first_line(exc)}") from None


def _unreachable(errors: Any) -> tuple[type[BaseException], ...]:
    """No network, no DNS, a refused connection, a timeout, offline mode: whatever HTTP
    library this huggingface_hub uses (httpx, its fork httpx2, requests: an OSError)."""
    found: list[type[BaseException]] = [OSError, errors.LocalEntryNotFoundError, errors.OfflineModeIsEnabled]
    for name in ("httpx2", "httpx"):
        transport = getattr(sys.modules.get(name), "TransportError", None)
        if isinstance(transport, type) and issubclass(transport, BaseException):
            found.append(transport)
    return tuple(found)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    return first.removeprefix("Got: ")


def push(
    env_dir: str | Path,
    repo_id: str,
    *,
    private: bool = False,
    dry_run: bool = False,
    token: str | None = None,
    endpoint: str | None = None,
    commit_message: str | None = None,
) -> PushResult:
    """Publish ``env_dir`` as a Docker Space ``repo_id``; a dry run only stages and lists.

    Raises ``HubError`` without a token (not needed for a dry run) or when the Hub refuses.
    """
    check_repo_id(repo_id)
    api = None
    if not dry_run:  # fail on the token before staging anything
        token = resolve_token(token)
        if not token:
            raise HubError("no Hugging Face token: set HF_TOKEN or run `hf auth login`")
        api = _api(endpoint, token)
        _hub_call("authentication (whoami)", api.whoami)
    with tempfile.TemporaryDirectory(prefix="openenv-push-") as tmp:
        files = stage_space(env_dir, tmp)
        result = PushResult(repo_id, files, dry_run=dry_run, private=private)
        if api is None:
            return result
        repo = _hub_call(
            f"creating Space {repo_id}",
            api.create_repo,
            repo_id,
            repo_type="space",
            space_sdk="docker",
            private=private,
            exist_ok=True,
        )
        info = _hub_call(
            f"uploading to {repo_id}",
            api.upload_folder,
            folder_path=tmp,
            repo_id=repo_id,
            repo_type="space",
            commit_message=commit_message or f"openenv push {Path(env_dir).name}",
        )
        result.url = str(repo)
        result.commit = getattr(info, "oid", None)
        return result


def pull(
    repo_id: str,
    dest: str | Path | None = None,
    *,
    revision: str | None = None,
    token: str | None = None,
    endpoint: str | None = None,
) -> Path:
    """Download a Space's files into ``dest`` (default ``./<name>``); nothing is installed or run.

    ``repo_id`` may pin a revision (``org/name@v1``), as ``revision`` does; a revision
    the Space does not have is a one-line ``HubError``."""
    repo_id, revision = split_pin(repo_id, revision)
    check_repo_id(repo_id)
    target = Path(dest) if dest is not None else Path(repo_id.split("/", 1)[1])
    path = _hub_call(
        f"downloading {repo_id}" + (f" at revision {revision}" if revision else ""),
        hf().snapshot_download,
        repo_id,
        repo_type="space",
        revision=revision,
        local_dir=str(target),
        token=resolve_token(token),
        endpoint=endpoint,
    )
    return Path(path)

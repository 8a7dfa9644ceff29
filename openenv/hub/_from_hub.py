"""``from_hub``: a client for an env published as a Hugging Face Space.

Two ways, chosen by the caller:

* the live Space (default): connect to ``https://<org>-<name>.hf.space``; for a private
  Space the token goes along as ``Authorization: Bearer``. Nothing runs locally.
* ``use_docker=True``: download the Space, build its Dockerfile locally (no network in
  the build) and run the image. That runs code from the Hub, so it needs
  ``trust_remote_code=True``; without it ``HubError`` is raised and nothing is fetched.
"""

from __future__ import annotations

import asyncio
import re
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._exceptions import HubError
from .._space import space_url as _space_url
from ._pin import split_pin
from ._push import _api, _hub_call, check_repo_id, pull, resolve_token


@dataclass(slots=True)
class HubTarget:
    """Where a client for a Space connects: a URL (plus headers) or a local image."""

    url: str | None = None
    image: str | None = None
    headers: dict[str, str] = field(default_factory=dict)


def space_url(repo_id: str) -> str:
    """The live URL of Space ``repo_id`` (``org/my_env`` -> ``https://org-my-env.hf.space``)."""
    return _space_url(check_repo_id(repo_id))


def image_tag(repo_id: str) -> str:
    return "openenv-hub-" + re.sub(r"[^a-z0-9_.-]", "-", repo_id.replace("/", "--").lower())


def build_space_image(folder: Path, tag: str, base_image: str | None = None, progress: Any = None) -> str:
    """Build a pulled Space's Dockerfile on the openenv base image, offline."""
    from ..containers import DEFAULT_BASE_IMAGE
    from ..containers._build import _docker_build, build_base
    from ..containers._docker import using_client

    def say(line: str) -> None:
        if progress is not None:
            progress(line)

    with using_client() as client:
        base = build_base(base_image or DEFAULT_BASE_IMAGE, client=client, progress=say)
        _docker_build(client, folder, tag, {"BASE_IMAGE": base, "PIP_OPTIONS": "--no-index"}, False, say)
    return tag


def resolve_hub_target(
    repo_id: str,
    *,
    use_docker: bool = False,
    trust_remote_code: bool = False,
    token: str | None = None,
    endpoint: str | None = None,
    url: str | None = None,
    base_image: str | None = None,
    progress: Any = None,
    revision: str | None = None,
) -> HubTarget:
    """Decide how to reach Space ``repo_id``; for ``use_docker`` also build its image.

    Args:
        url: connect here instead of the Space's ``hf.space`` address (a mirror, a test).
        base_image: python image the openenv base is built on (``use_docker`` only).
        revision: a branch, tag or commit (or pin it in the id: ``org/name@v1``). With
            ``use_docker`` that revision is built; the live Space runs its head, so a pin
            to another commit is a ``HubError`` there (build it with ``use_docker``).
    """
    repo_id, revision = split_pin(repo_id, revision)
    check_repo_id(repo_id)
    token = resolve_token(token)
    if use_docker:
        if not trust_remote_code:
            raise HubError(
                f"building and running {repo_id}'s image runs code from the Hub: "
                "pass trust_remote_code=True to allow it"
            )
        with tempfile.TemporaryDirectory(prefix="openenv-hub-") as tmp:
            folder = pull(repo_id, Path(tmp) / "space", revision=revision, token=token, endpoint=endpoint)
            tag = image_tag(repo_id if revision is None else f"{repo_id}@{revision}")
            return HubTarget(image=build_space_image(folder, tag, base_image, progress))
    api = _api(endpoint, token)
    info = _hub_call(f"looking up Space {repo_id}", api.space_info, repo_id)
    if revision is not None:
        pinned = _hub_call(f"looking up Space {repo_id} at revision {revision}", api.space_info,
                           repo_id, revision=revision)
        if getattr(pinned, "sha", None) != getattr(info, "sha", None):
            raise HubError(
                f"{repo_id}@{revision} is commit {pinned.sha} but the live Space runs {info.sha}: "
                "pass use_docker=True, trust_remote_code=True to build the pinned revision"
            )
    headers = {}
    if getattr(info, "private", False):
        if not token:
            raise HubError(f"{repo_id} is private: set HF_TOKEN or pass token=")
        # Only to a private Space: a public Space's code would otherwise see the token.
        headers["Authorization"] = f"Bearer {token}"
    return HubTarget(url=url or space_url(repo_id), headers=headers)


def _client_kwargs(target: HubTarget, kwargs: dict[str, Any]) -> dict[str, Any]:
    if target.headers:
        kwargs = {**kwargs, "headers": {**target.headers, **(kwargs.get("headers") or {})}}
    return kwargs


def from_hub(client_cls: Any, repo_id: str, models: Any, **options: Any) -> Any:
    """A connected ``client_cls`` (``EnvClient``) for Space ``repo_id``.

    ``options``: those of ``resolve_hub_target``, ``provider_options`` (docker), and the
    rest for the client.
    """
    names = resolve_hub_target.__kwdefaults__ or {}
    hub_opts = {k: options.pop(k) for k in list(options) if k in names}
    provider_options = options.pop("provider_options", None)
    target = resolve_hub_target(repo_id, **hub_opts)
    if target.image is not None:
        image = target.image
        return client_cls.from_docker_image(image, models, provider_options=provider_options, **options)
    client = client_cls(target.url, models, **_client_kwargs(target, options))
    return client.connect()


async def from_hub_async(client_cls: Any, repo_id: str, models: Any, **options: Any) -> Any:
    """``from_hub`` for ``AsyncEnvClient``: the Hub calls and any build run off the loop."""
    names = resolve_hub_target.__kwdefaults__ or {}
    hub_opts = {k: options.pop(k) for k in list(options) if k in names}
    provider_options = options.pop("provider_options", None)
    target = await asyncio.to_thread(lambda: resolve_hub_target(repo_id, **hub_opts))
    if target.image is not None:
        return await client_cls.from_docker_image(
            target.image, models, provider_options=provider_options, **options
        )
    client = client_cls(target.url, models, **_client_kwargs(target, options))
    return await client.connect()

"""``AutoEnv``: a client for an env named by its installed package or its Hub Space.

``AutoEnv.from_hub("echo")`` finds the installed ``openenv-echo*`` package (see
``_discovery``); ``AutoEnv.from_hub("org/name")`` installs the Space's package (asking
first, see ``_install``) and connects to the running Space, or to its image run here.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import shutil
import subprocess
import sys
from typing import Any

from ..client._hooks_ready import DictEnvClient
from . import _connect
from ._discovery import EnvironmentDiscovery, get_discovery
from ._install import TRUST_VAR, _confirm_remote_install, installed_package, trusted_by_environment
from ._lookup import find_env, import_failed
from ._names import _is_hub_url, git_url_of, is_local_url, package_env_name, repo_id_of, space_url_of
from ._pin import check_pin

__all__ = ["AutoEnv", "has_uv", "pip_command"]

log = logging.getLogger(__name__)

#: Hub repo id -> the env key its installed package gave, for this process.
_hub_env_names: dict[str, str] = {}


def has_uv() -> bool:
    """Whether ``uv`` is on PATH."""
    return shutil.which("uv") is not None


def pip_command(uv: bool | None = None) -> list[str]:
    """``uv pip`` when uv is there (``uv``: whether it is; None: look), else this
    interpreter's pip."""
    return ["uv", "pip"] if (has_uv() if uv is None else uv) else [sys.executable, "-m", "pip"]


class AutoEnv:
    """Factory of env clients by name; use the class methods, never an instance.

    What it asks of the world goes through the hooks ``_discovery``, ``_confirm``,
    ``_pip_command`` and ``_generic_client``: ``openenv.auto`` maps them to upstream's
    module-level names (which upstream's users patch)."""

    def __init__(self) -> None:
        raise TypeError(
            "AutoEnv is a factory class and is not instantiated: "
            "use AutoEnv.from_hub() or AutoEnv.from_env() for a client"
        )

    # --- hooks ----------------------------------------------------------------------

    @classmethod
    def _discovery(cls) -> EnvironmentDiscovery:
        return get_discovery()

    @classmethod
    def _confirm(cls, repo_id: str) -> bool:
        return _confirm_remote_install(repo_id)

    @classmethod
    def _pip_command(cls) -> list[str]:
        return pip_command()

    @classmethod
    def _generic_client(cls) -> type[Any]:
        return DictEnvClient

    # --- Hub names -------------------------------------------------------------------

    @classmethod
    def _resolve_space_url(cls, repo_id: str) -> str:
        return space_url_of(repo_id)

    @classmethod
    def _get_hub_git_url(cls, repo_id: str) -> str:
        return git_url_of(repo_id)

    @classmethod
    def _is_local_url(cls, url: str) -> bool:
        return is_local_url(url)

    @classmethod
    def _check_server_availability(cls, base_url: str, timeout: float = 2.0) -> bool:
        return _connect.is_healthy(base_url, timeout)

    @classmethod
    def _check_space_availability(cls, space_url: str, timeout: float = 5.0) -> bool:
        return _connect.is_healthy(space_url, timeout)

    # --- installing a Space's package ------------------------------------------------

    @classmethod
    def _install_from_hub(cls, repo_id: str, trust_remote_code: bool = False) -> str:
        """pip-install Space ``repo_id``'s package from its git URL; its package name."""
        if not trust_remote_code and not cls._confirm(repo_id):
            raise ValueError(
                f"Installation cancelled: the code of {repo_id!r} was not trusted "
                f"(pass trust_remote_code=True or set {TRUST_VAR}=1 to allow it)"
            )
        command = [*cls._pip_command(), "install", git_url_of(repo_id)]
        log.info("installing %s: %s", repo_id, " ".join(command))
        try:
            done = subprocess.run(command, check=True, capture_output=True, text=True)
        except subprocess.CalledProcessError as exc:
            said = [line for line in (exc.stderr or exc.stdout or str(exc)).splitlines() if line.strip()]
            last = said[-1].strip() if said else str(exc)
            raise ValueError(  # one line: pip's last (a pin to no such revision says so there)
                f"Failed to install env {repo_id!r} with {' '.join(command)}: {last}"
            ) from exc
        found = installed_package(f"{done.stdout or ''}\n{done.stderr or ''}")
        return found or f"openenv-{package_env_name(repo_id)}"

    @classmethod
    def _is_package_installed(cls, package_name: str) -> bool:
        try:
            importlib.metadata.distribution(package_name)
        except importlib.metadata.PackageNotFoundError:
            return False
        return True

    @classmethod
    def _ensure_package_from_hub(cls, name: str, trust_remote_code: bool = False) -> str:
        """The env key of Space ``name``'s package, installing it when it is missing."""
        if name in _hub_env_names:
            return _hub_env_names[name]
        expected = package_env_name(name)
        discovery = cls._discovery()
        pinned = "@" in repo_id_of(name)  # installed at the pin, whatever is installed now
        if not pinned and cls._is_package_installed(f"openenv-{expected}"):
            discovery.clear_cache()
            discovery.discover(use_cache=False)
            key = expected.removesuffix("_env")
        else:
            discovery.clear_cache()
            before = set(discovery.discover(use_cache=False))
            cls._install_from_hub(name, trust_remote_code=trust_remote_code)
            importlib.invalidate_caches()
            discovery.clear_cache()
            new = sorted(set(discovery.discover(use_cache=False)) - before)
            key = new[0] if new else expected.removesuffix("_env")
        _hub_env_names[name] = key
        return key

    # --- clients ---------------------------------------------------------------------

    @classmethod
    def from_env(
        cls,
        name: str,
        base_url: str | None = None,
        docker_image: str | None = None,
        container_provider: Any = None,
        wait_timeout: float = 30.0,
        env_vars: dict[str, str] | None = None,
        trust_remote_code: bool = False,
        skip_install: bool = False,
        **kwargs: Any,
    ) -> Any:
        """A connected client for env ``name``: an installed env (``echo``) or a Space
        (``org/name``). With ``base_url`` it connects there (starting ``docker_image``
        when that local server is down); without, it runs the env's image (a live
        Space is connected to directly). ``skip_install`` uses the generic client."""
        consent = trust_remote_code or trusted_by_environment()
        launch = _connect.Launcher(container_provider, wait_timeout, env_vars, kwargs, may_pull=consent)
        if skip_install:
            return cls._generic(name, base_url, docker_image, launch)
        env_name = name
        if _is_hub_url(name):
            check_pin(name)  # a pinned revision exists, and the live Space runs it
            space = cls._resolve_space_url(name)
            live = cls._check_space_availability(space)
            env_name = cls._ensure_package_from_hub(name, trust_remote_code=trust_remote_code)
            if live and base_url is None:
                base_url = space
        info = find_env(cls._discovery(), env_name)
        try:
            client_cls = info.get_client_class()
        except ImportError as exc:
            raise import_failed("client class", env_name, info, exc) from exc
        image = docker_image or info.default_image
        if base_url is None:
            return launch.image(client_cls, image)
        if cls._check_server_availability(base_url):
            return client_cls(base_url=base_url, provider=None, **kwargs)
        if cls._is_local_url(base_url):
            log.info("no server at %s: starting %s", base_url, image)
            return launch.image(client_cls, image)
        raise ConnectionError(f"no env server answers at {base_url}: is it running?")

    @classmethod
    def _generic(
        cls, name: str, base_url: str | None, docker_image: str | None, launch: _connect.Launcher
    ) -> Any:
        """A generic client (``_generic_client``: no env package needed) on ``base_url``, the live
        Space, the Space's image run here, or ``docker_image``."""
        generic = cls._generic_client()
        if base_url:
            if not cls._check_server_availability(base_url):
                raise ConnectionError(f"no env server answers at {base_url}: is it running?")
            return generic(base_url=base_url, **launch.options)
        if _is_hub_url(name):
            check_pin(name)
            space = cls._resolve_space_url(name)
            if cls._check_space_availability(space):
                return generic(base_url=space, **launch.options)
            return launch.space(generic, repo_id_of(name))
        if docker_image:
            return launch.image(generic, docker_image)
        raise ValueError(
            f"skip_install=True for the installed env {name!r} needs base_url (a running "
            "server) or docker_image (an image to run); or leave skip_install False"
        )

    #: Upstream's other names for the same factory.
    from_hub = from_env
    from_name = from_env

    # --- what is installed -----------------------------------------------------------

    @classmethod
    def get_env_class(cls, name: str) -> type[Any]:
        """The client class of installed env ``name`` (imported, not instantiated)."""
        return find_env(cls._discovery(), name).get_client_class()

    @classmethod
    def get_env_info(cls, name: str) -> dict[str, Any]:
        """What discovery knows of installed env ``name``, as a plain dict."""
        info = find_env(cls._discovery(), name)
        return {
            "env_key": info.env_key,
            "name": info.name,
            "package": info.package_name,
            "version": info.version,
            "description": info.description,
            "env_class": info.client_class_name,
            "action_class": info.action_class_name,
            "observation_class": info.observation_class_name,
            "module": info.client_module_path,
            "default_image": info.default_image,
            "spec_version": info.spec_version,
        }

    @classmethod
    def list_environments(cls) -> None:
        """Print the installed envs."""
        cls._discovery().list_environments()

    @classmethod
    def list_hub_environments(
        cls,
        search: str | None = None,
        author: str | None = None,
        limit: int | None = 50,
        *,
        endpoint: str | None = None,
        token: str | None = None,
    ) -> list[Any]:
        """Print and return the env Spaces on the Hub (tagged ``openenv``, the most liked
        first): ``openenv.hub.list_envs``. Needs the ``hub`` extra."""
        from ..hub import list_envs

        found = list_envs(search, author, limit, endpoint=endpoint, token=token)
        rule = "-" * 70
        print("OpenEnv environments on the Hugging Face Hub:")
        print(rule)
        for env in found:
            print(f"  {env.repo_id:<40} {env.likes:>5} likes   AutoEnv.from_hub({env.repo_id!r})")
        if not found:
            print("  none found")
        print(rule)
        print(f"Total: {len(found)} env Spaces")
        return found

"""Discovery of installed env packages (``openenv-<name>`` distributions).

Each ``openenv-*`` distribution (but the legacy ``openenv-core`` wheel) is an env whose
module is the rest of its name (``openenv-echo-env`` -> ``echo_env``); its optional
``openenv.yaml`` names the env and may name its action and observation classes, the
rest follows naming conventions. Results are cached per user (``_cache``).
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.resources
import logging
from typing import Any

from ._cache import default_cache_file, load_cache, save_cache
from ._info import EnvironmentInfo
from ._names import _infer_class_name, env_key_of

__all__ = ["EnvironmentDiscovery", "EnvironmentInfo", "env_info_from", "get_discovery", "reset_discovery"]

log = logging.getLogger(__name__)

_PREFIX = "openenv-"
_NOT_ENVS = frozenset({"openenv-core"})
_INSTALL_HINT = "pip install openenv-<env-name>"


def _parse_manifest(text: str) -> dict[str, Any] | None:
    """A manifest's mapping: with PyYAML when installed, else its flat ``key: value``
    lines (all that discovery reads)."""
    try:
        yaml: Any = importlib.import_module("yaml")
    except ImportError:
        flat = [line.split(":", 1) for line in text.splitlines() if ":" in line and not line[:1].isspace()]
        return {key.strip(): value.strip().strip("'\"") for key, value in flat if not key.startswith("#")}
    data = yaml.safe_load(text)
    return data if isinstance(data, dict) else None


def _load_manifest_from_package(package_name: str, module_name: str) -> dict[str, Any] | None:
    """The parsed ``openenv.yaml`` shipped in module ``module_name``, or None."""
    try:
        manifest = importlib.resources.files(module_name) / "openenv.yaml"
        if not manifest.is_file():
            return None
        return _parse_manifest(manifest.read_text(encoding="utf-8"))
    except (ModuleNotFoundError, FileNotFoundError, TypeError):
        return None
    except Exception as exc:  # a broken manifest must not hide the other envs
        log.warning("ignoring the openenv.yaml of %s (%s): %s", module_name, package_name, exc)
        return None


def env_info_from(
    package_name: str, module_name: str, version: str, manifest: dict[str, Any] | None
) -> EnvironmentInfo:
    """What discovery records for module ``module_name`` of distribution ``package_name``,
    whose ``openenv.yaml`` reads ``manifest`` (None: it has none)."""
    named = str(manifest["name"]) if manifest and manifest.get("name") else module_name
    env_name = named if named.endswith("_env") else f"{named}_env"
    custom = manifest if manifest and "action" in manifest and "observation" in manifest else {}
    spec = manifest.get("spec_version") if manifest else None
    return EnvironmentInfo(
        env_key=env_name.removesuffix("_env"),
        name=env_name,
        package_name=package_name,
        version=version,
        description=str((manifest or {}).get("description") or f"{env_name} environment"),
        client_module_path=f"{module_name}.client",
        client_class_name=_infer_class_name(env_name, "client"),
        action_class_name=str(custom.get("action") or _infer_class_name(env_name, "action")),
        observation_class_name=str(custom.get("observation") or _infer_class_name(env_name, "observation")),
        default_image=env_name.replace("_", "-") + ":latest",
        spec_version=spec if isinstance(spec, int) else None,
        manifest=manifest,
    )


class EnvironmentDiscovery:
    """Finds installed env packages; remembers them in memory and in a per-user file."""

    def __init__(self) -> None:
        self._cache: dict[str, EnvironmentInfo] | None = None
        self._cache_file = default_cache_file()

    def _discover_installed_packages(self) -> dict[str, EnvironmentInfo]:
        """Every installed env package, by env key (no cache involved)."""
        importlib.invalidate_caches()
        found: dict[str, EnvironmentInfo] = {}
        for dist in importlib.metadata.distributions():
            package = dist.metadata["Name"] or ""
            if not package.startswith(_PREFIX) or package in _NOT_ENVS:
                continue
            module = package.removeprefix(_PREFIX).replace("-", "_").replace(".", "_")
            try:
                info = self._info_of(package, module, dist.version)
            except Exception as exc:  # one broken package must not hide the others
                log.warning("skipping env package %s: %s", package, exc)
                continue
            if info is not None:
                found[info.env_key] = info
        return found

    def _info_of(self, package: str, module: str, version: str) -> EnvironmentInfo | None:
        """What to record for one installed env package (a hook: ``openenv.auto`` maps
        it to upstream's patchable module-level functions)."""
        return env_info_from(package, module, version, _load_manifest_from_package(package, module))

    def _load_cache(self) -> dict[str, EnvironmentInfo] | None:
        return load_cache(self._cache_file)

    def _save_cache(self, environments: dict[str, EnvironmentInfo]) -> None:
        if not save_cache(self._cache_file, environments):
            log.debug("could not write the discovery cache %s", self._cache_file)

    def discover(self, use_cache: bool = True) -> dict[str, EnvironmentInfo]:
        """Every installed env by key: from memory, else the cache file, else a fresh
        scan (``use_cache=False`` always scans) that refreshes both."""
        if use_cache and self._cache is not None:
            return self._cache
        cached = self._load_cache() if use_cache else None
        if cached is None:
            cached = self._discover_installed_packages()
            self._save_cache(cached)
        self._cache = cached
        return cached

    def get_environment(self, env_key: str) -> EnvironmentInfo | None:
        """The env with key ``env_key`` (``echo``), or None."""
        return self.discover().get(env_key)

    def get_environment_by_name(self, name: str) -> EnvironmentInfo | None:
        """The env any spelling of ``name`` means (``echo``, ``echo-env``, ``echo_env``)."""
        return self.get_environment(env_key_of(name))

    def list_environments(self) -> None:
        """Print the discovered envs, one per line, and their count."""
        environments = self.discover()
        rule = "-" * 70
        print("Available OpenEnv Environments:")
        print(rule)
        if not environments:
            print("  No OpenEnv environments found.")
            print(f"  Install one with: {_INSTALL_HINT}")
        for key in sorted(environments):
            info = environments[key]
            print(f"  {key:<15}: {info.description} (v{info.version})")
            print(f"  {'':<15}  package {info.package_name}")
        print(rule)
        print(f"Total: {len(environments)} environments")

    def clear_cache(self) -> None:
        """Forget the discovered envs (memory and file)."""
        self._cache_file.unlink(missing_ok=True)
        self._cache = None


_discovery: EnvironmentDiscovery | None = None


def get_discovery(kind: type[EnvironmentDiscovery] = EnvironmentDiscovery) -> EnvironmentDiscovery:
    """The process-wide discovery, made on first use as a ``kind`` (remade as one when
    the one there is not: ``openenv.auto`` asks for its subclass)."""
    global _discovery
    if not isinstance(_discovery, kind):
        _discovery = kind()
    return _discovery


def reset_discovery() -> None:
    """Drop the process-wide discovery; the next :func:`get_discovery` makes a new one."""
    global _discovery
    _discovery = None

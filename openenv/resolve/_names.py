"""Name rules of env discovery: env names, class names, Hub repo ids and their URLs."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import urlsplit

from .._space import space_url

_HUB_HOST = "huggingface.co"
_SUFFIX = {"client": "Env", "action": "Action", "observation": "Observation"}


def _normalize_env_name(name: str) -> str:
    """Any spelling of an env name -> its module name: ``echo``, ``echo-env``,
    ``echo_env`` -> ``echo_env``; ``browser-gym`` -> ``browser_gym_env``."""
    stem = re.sub(r"[-_]env$", "", name.strip()).replace("-", "_")
    return stem if stem.endswith("_env") else f"{stem}_env"


def env_key_of(name: str) -> str:
    """The discovery key of an env name: its normalised module name less ``_env``."""
    return _normalize_env_name(name).removesuffix("_env")


def _is_hub_url(name: str) -> bool:
    """Whether ``name`` names a Hub repo (``org/name`` or a ``huggingface.co`` URL)
    rather than an installed env."""
    return "/" in name or _HUB_HOST in name


def _infer_class_name(env_name: str, class_type: str) -> str:
    """The conventional class name of one kind (``client``, ``action``, ``observation``)
    in env ``env_name``: ``browser_gym_env`` + ``client`` -> ``BrowserGymEnv``."""
    if class_type not in _SUFFIX:
        raise ValueError(f"unknown class type {class_type!r}: use one of {sorted(_SUFFIX)}")
    words = env_name.removesuffix("_env").split("_")
    return "".join(word.capitalize() for word in words) + _SUFFIX[class_type]


def repo_id_of(name: str) -> str:
    """``org/name`` out of a repo id or a Hub URL (``https://huggingface.co/spaces/org/name``)."""
    rest = name.strip().rstrip("/")
    for scheme in ("https://", "http://"):
        rest = rest.removeprefix(scheme)
    rest = rest.removeprefix(_HUB_HOST + "/").removeprefix("spaces/")
    return rest


def unpinned(name: str) -> str:
    """``org/name`` out of a repo id or Hub URL that may pin a revision (``org/name@v1``)."""
    return repo_id_of(name).partition("@")[0]


def space_url_of(name: str) -> str:
    """The live URL of the Space ``name`` points at (``org/my-env`` -> ``https://org-my-env.hf.space``)."""
    return space_url(unpinned(name))


def git_url_of(name: str) -> str:
    """A pip-installable ``git+`` URL of the Space ``name`` points at; a pin
    (``org/name@v1``) stays on it, as pip's ``@ref``."""
    return f"git+https://{_HUB_HOST}/spaces/{repo_id_of(name)}"


def is_local_url(url: str) -> bool:
    """Whether ``url``'s host is this machine: ``localhost``, a loopback address or
    ``0.0.0.0`` / ``::`` (judged on the parsed host, never on a substring)."""
    try:
        host = urlsplit(url).hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def package_env_name(repo_id: str) -> str:
    """The env module a Space's package is expected to bring (``org/coding-env`` -> ``coding_env``)."""
    stem = unpinned(repo_id).rsplit("/", 1)[-1].replace("-", "_")
    return stem if stem.endswith("_env") else f"{stem}_env"

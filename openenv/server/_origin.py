"""Browser-origin protection: which ``Host`` and ``Origin`` a request may carry.

A server on a developer's machine is reachable by every web page that machine's
browser opens. Two checks, run by ``Admission`` once per HTTP request and once per
WebSocket handshake (never per frame), keep such pages out:

* **Origin.** A browser names the page that makes a request in ``Origin`` (always on a
  WebSocket handshake and on every non-GET request, ``no-cors`` ones included). A request
  with an ``Origin`` is served only when that origin is the server's own (its
  ``host[:port]`` is the request's ``Host``) or is listed in ``allowed_origins``
  (``"*"``: any). A plain GET carries no ``Origin``; a browser's says in
  ``Sec-Fetch-Site`` whether another site's page made it, and such a GET is refused too
  unless it is a navigation (a link the user follows). Requests with neither header
  (Python clients, curl, probes) are not browsers' cross-origin requests and pass.
* **Host.** A DNS-rebinding page makes its own name resolve to ``127.0.0.1``: its
  requests are then same-origin, but carry its name in ``Host``. On a loopback bind
  (the default) ``Host`` must be a loopback name (``localhost``, ``*.localhost``), an IP
  address (a page cannot rebind an address), a name without a dot (public DNS gives out
  none: a machine's or a container's name, Starlette's ``testserver``) or the bound
  name; on any other bind every
  ``Host`` passes (the server is reached under names it cannot know: a Space's domain,
  a Service's name) unless ``allowed_hosts`` is set: then only those names and the
  defaults do. ``allowed_hosts`` ``"*"`` turns the check off.

Both lists are comma-separated (``--allowed-hosts``, ``OPENENV_ALLOWED_HOSTS``,
``--allowed-origins``, ``OPENENV_ALLOWED_ORIGINS``). A refused request gets ``403`` /
``FORBIDDEN`` before anything else runs.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable

_LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
#: ``Sec-Fetch-Site`` values of a request another page made (``same-site``: another port).
_OTHER_SITES = frozenset({b"cross-site", b"same-site"})
_DEFAULT_PORTS = {"http": "80", "https": "443", "ws": "80", "wss": "443"}


def split_list(raw: str) -> tuple[str, ...]:
    """The items of a comma-separated setting, stripped, empty ones dropped."""
    return tuple(item.strip() for item in raw.split(",") if item.strip())


def host_name(host: str) -> str:
    """The name in a ``Host`` value, lower case, without its port or IPv6 brackets."""
    host = host.strip().lower()
    if host.startswith("["):
        return host[1 : host.find("]")] if "]" in host else host[1:]
    if host.count(":") == 1:
        return host.partition(":")[0]
    return host  # a name, or a bare IPv6 address (no brackets, so no port)


def _is_ip(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return False
    return True


def is_loopback_bind(host: str) -> bool:
    """Whether the server binds a loopback interface only (``127.0.0.1``, ``::1``, ``localhost``)."""
    name = host_name(host) if host.startswith("[") else host.strip().lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _authority(origin: str) -> tuple[str, str] | None:
    """``(scheme, host[:port])`` of an origin, the scheme's default port left out."""
    scheme, sep, rest = origin.strip().lower().partition("://")
    if not sep or not rest or "/" in rest:
        return None
    default = _DEFAULT_PORTS.get(scheme)
    if default and rest.endswith(f":{default}"):
        rest = rest[: -len(default) - 1]
    return scheme, rest


def _bare_host(host: str) -> str:
    """A ``Host`` value without the default HTTP(S) port (browsers leave it out of ``Origin``)."""
    host = host.strip().lower()
    for port in (":80", ":443"):
        if host.endswith(port):
            return host[: -len(port)]
    return host


class OriginPolicy:
    """The ``Host`` and ``Origin`` checks of one server (see the module docstring).

    Args:
        bind: the interface the server binds (``ServerSettings.host``).
        allowed_hosts: ``Host`` names served besides the defaults (loopback names, IP
            addresses, names without a dot, the bound name); ``"*"``: any.
        allowed_origins: origins (``scheme://host[:port]``) served besides the server's
            own; ``"*"``: any.
    """

    __slots__ = ("any_host", "any_origin", "hosts", "origins")

    def __init__(
        self, bind: str, allowed_hosts: Iterable[str] = (), allowed_origins: Iterable[str] = ()
    ) -> None:
        listed = {host_name(h) for h in allowed_hosts}
        origins = list(allowed_origins)
        self.any_host = "*" in listed or (not listed and not is_loopback_bind(bind))
        self.hosts = frozenset(listed | _LOOPBACK_NAMES | {host_name(bind)})
        self.any_origin = "*" in origins
        self.origins = frozenset(a for a in (_authority(o) for o in origins if o != "*") if a is not None)

    def host_allowed(self, host: str) -> bool:
        if self.any_host:
            return True
        name = host_name(host)
        return name in self.hosts or name.endswith(".localhost") or "." not in name or _is_ip(name)

    def origin_allowed(self, origin: str, host: str | None) -> bool:
        if self.any_origin:
            return True
        authority = _authority(origin)
        if authority is None:  # "null" (a sandboxed frame, a file: page) or garbage
            return False
        if host is not None and authority[1] == _bare_host(host):
            return True  # the server's own pages (the /web playground)
        return authority in self.origins

    def refusal(
        self, host: bytes | None, origin: bytes | None, fetch_site: bytes | None = None,
        fetch_mode: bytes | None = None,
    ) -> str | None:
        """Why a request with these headers is refused; None when it is served.

        ``fetch_site`` and ``fetch_mode`` are ``Sec-Fetch-Site`` and ``Sec-Fetch-Mode``:
        a browser names no ``Origin`` on a plain GET (an ``<img>``, a ``<script>``), but
        says there whether another site's page made it.
        """
        host_text = host.decode("latin-1") if host is not None else None
        if host_text is not None and not self.host_allowed(host_text):
            return (
                f"Host {host_text!r} is not one this server answers to (a DNS-rebinding guard): "
                "reach it as localhost or by address, or list the name in --allowed-hosts "
                "(OPENENV_ALLOWED_HOSTS)"
            )
        if origin is not None:
            origin_text = origin.decode("latin-1")
            if not self.origin_allowed(origin_text, host_text):
                return (
                    f"a page from origin {origin_text!r} may not use this server: only its own "
                    "pages and the origins in --allowed-origins (OPENENV_ALLOWED_ORIGINS) may"
                )
        elif fetch_site in _OTHER_SITES and fetch_mode != b"navigate" and not self.any_origin:
            return (  # a link the user follows (navigate) is theirs; an <img> or <script> is the page's
                "a page of another site may not use this server (Sec-Fetch-Site: "
                f"{fetch_site.decode('latin-1')}): only its own pages and the origins in "
                "--allowed-origins may"
            )
        return None

"""The task pages, served as Chromium's only way out.

Chromium is started with this server as its HTTP proxy for every request, loopback
included (``--proxy-bypass-list=<-loopback>``). The server answers requests for the
task origin, ``TASK_ORIGIN`` (a name that is no address on this machine), from the
MiniWoB pages, and closes the connection on anything else: a page's fetch, image,
frame, WebSocket (a ``CONNECT``) or navigation to the env server, to another service
on 127.0.0.1 or to the outside fails as an unreachable host would. Origins the
operator allows bypass the proxy (``proxy_bypass``).

A few MiniWoB pages put the agent's typed text into ``innerHTML``, which would let an
agent run script (and end its own episode with a reward). ``PAGE_PATCHES`` serves
those pages with the sink made a text sink; the text shown is the same.
"""

from __future__ import annotations

import functools
import http.server
import io
import logging
import threading
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

log = logging.getLogger("browser_env")

#: The origin the task pages are served from (only through the proxy). ``.localhost``
#: keeps it a secure context, as 127.0.0.1 was; Chromium sends it to the proxy.
TASK_ORIGIN = "http://miniwob.localhost"

#: Page -> (unsafe text, its replacement): agent-typed text reaches these sinks.
PAGE_PATCHES: dict[str, tuple[tuple[str, str], ...]] = {
    # The terminal echoes each typed command line, and puts file names typed after
    # `rm` into its error message: both as text, not markup.
    "miniwob/terminal.html": (
        (
            "div.getElementsByClassName('command')[0].innerHTML = commandInput;",
            "div.getElementsByClassName('command')[0].textContent = commandInput;",
        ),
        (
            "div.getElementsByClassName('output')[0].innerHTML = output;",
            "div.getElementsByClassName('output')[0].textContent = output;",
        ),
    ),
}


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL (lower case), or ``""`` when it has none."""
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        return ""
    return f"{parts.scheme.lower()}://{parts.netloc.lower()}"


def patched_pages(root: Path) -> dict[str, bytes]:
    """``PAGE_PATCHES`` applied to the pages under ``root``; each unsafe text must occur
    exactly once (another MiniWoB release must be looked at again, not served as is)."""
    out: dict[str, bytes] = {}
    for rel, patches in PAGE_PATCHES.items():
        text = (root / rel).read_text(encoding="utf-8")
        for old, new in patches:
            if text.count(old) != 1:
                raise RuntimeError(
                    f"browser_env: {root / rel} is not the page its patch was written for "
                    f"({old!r} occurs {text.count(old)} times): install miniwob==1.1.0"
                )
            text = text.replace(old, new)
        out["/" + rel] = text.encode("utf-8")
    return out


class _TaskProxyHandler(http.server.SimpleHTTPRequestHandler):
    """GET and HEAD of the task origin, asked of a proxy; any other request is dropped."""

    patched: dict[str, bytes] = {}

    def parse_request(self) -> bool:
        if not super().parse_request():
            return False
        if self.command in ("GET", "HEAD") and origin_of(self.path) == TASK_ORIGIN:
            parts = urlsplit(self.path)
            self.path = parts.path + (f"?{parts.query}" if parts.query else "")
            return True
        # Not the task origin (or not through the proxy): no answer, as if nothing listened.
        self.close_connection = True
        return False

    def send_head(self) -> Any:
        body = self.patched.get(urlsplit(self.path).path)
        if body is None:
            return super().send_head()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _PagesServer(http.server.ThreadingHTTPServer):
    # A page load opens a burst of connections (HTTP/1.0: one per script); the default
    # backlog of 5 refused some on a busy machine and a page came up without its scripts.
    request_queue_size = 128
    daemon_threads = True


class TaskServer:
    """The MiniWoB pages at ``TASK_ORIGIN``, through an HTTP proxy on 127.0.0.1."""

    origin = TASK_ORIGIN

    def __init__(self, root: Path | None = None) -> None:
        from ._tasks import pages_root

        root = root or pages_root()
        handler_class = type("TaskProxyHandler", (_TaskProxyHandler,), {"patched": patched_pages(root)})
        handler = functools.partial(handler_class, directory=str(root))
        self._httpd = _PagesServer(("127.0.0.1", 0), handler)
        self.port: int = self._httpd.server_address[1]
        self.proxy = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, name="browser-env-pages", daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def proxy_bypass(allowed_origins: tuple[str, ...] | list[str]) -> str:
    """``--proxy-bypass-list``: no implicit loopback bypass, and the allowed origins direct."""
    rules = ["<-loopback>"]
    for origin in allowed_origins:
        parts = urlsplit(origin_of(origin))
        if parts.hostname:
            port = f":{parts.port}" if parts.port else ""
            host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
            rules.append(f"{parts.scheme}://{host}{port}")
    return ";".join(rules)

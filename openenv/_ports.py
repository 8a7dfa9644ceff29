"""One check of a port a command is told to listen on: in range, and free to bind.

Each server command (``serve``, ``policy serve``, ``capture serve``) asks before it
loads anything or says it is serving, so a bad ``--port`` is one line and exit 2, not a
traceback from ``bind()`` or a server that announces a port it never took.
"""

from __future__ import annotations

import socket

__all__ = ["port_problem"]


def port_problem(port: int, host: str | None = None) -> str | None:
    """What is wrong with listening on ``port`` (``None``: nothing).

    Out of range always; with ``host``, also a port that cannot be bound there now
    (taken, or privileged for this user).
    """
    if not 0 <= port <= 65535:
        return f"--port {port} is not a port (0-65535; 0: any free one)"
    if host is None or port == 0:
        return None
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as exc:
        return f"--host {host} does not resolve ({exc.strerror})"
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(address)
        except OSError as exc:
            return f"cannot listen on {host}:{port}: {exc.strerror or exc}"
    return None

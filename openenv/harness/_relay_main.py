"""Run an agent in a sandbox whose ways out are loopback ports relayed to unix sockets.

    python3 -I _relay_main.py SOCKET PORT [SOCKET PORT]... -- AGENT ARGV...

Started inside the sandbox (its own network namespace: nothing but loopback), it
listens on 127.0.0.1:PORT for each pair, pipes each connection to that unix socket
(the session's capture endpoint; the env's MCP tools, when it has some: bind-mounted
in), runs the agent as its child and exits with the agent's exit status. Standard
library only: it runs under the system Python.
"""

from __future__ import annotations

import contextlib
import signal
import socket
import subprocess
import sys
import threading


def _pipe(src: socket.socket, dst: socket.socket) -> None:
    try:
        while data := src.recv(65536):
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s, how in ((dst, socket.SHUT_WR), (src, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                s.shutdown(how)


def _serve(listener: socket.socket, path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            upstream.connect(path)
        except OSError:
            client.close()
            upstream.close()
            continue
        for a, b in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pipe, args=(a, b), daemon=True).start()


def main(argv: list[str]) -> int:
    split = argv.index("--") if "--" in argv else -1
    pairs, command = argv[:split], argv[split + 1 :]
    if split < 2 or len(pairs) % 2 or not command:
        sys.stderr.write("usage: _relay_main.py SOCKET PORT [SOCKET PORT]... -- ARGV...\n")
        return 2
    for path, port in zip(pairs[::2], pairs[1::2], strict=True):
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", int(port)))
        listener.listen(64)
        threading.Thread(target=_serve, args=(listener, path), daemon=True).start()
    try:
        child = subprocess.Popen(command)
    except OSError as exc:
        sys.stderr.write(f"relay: cannot start {command[0]}: {exc}\n")
        return 127
    signal.signal(signal.SIGTERM, lambda *_: child.terminate())
    return child.wait()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

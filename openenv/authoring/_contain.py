"""``runtime.host_containment`` and ``runtime.network_policy``, measured on a served env.

The subject is what the agent reaches: for an env whose actions run code or commands
(``_hacking.action_kind``), the session that runs them; for any other env, the server
process itself (nothing the agent sends is run). Both checks measure, never trust a
claim: code is submitted that tries to read a file the validator keeps outside the
session, to write next to it, and to open a TCP connection to a listener the
validator holds on 127.0.0.1; the validator then looks at what happened on its side.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .._exceptions import ProbeError
from .._vmanifest import ValidationBlock
from ._checks import Context
from ._hacking import PY, action_kind
from ._policy import CheckStatus
from ._vreport import Results


def _submit(ctx: Context, kind: str, payload: str) -> str:
    """Run ``payload`` in a fresh session (Python or a shell command); every reply as text."""
    step = {"code": payload} if kind == PY else {"command": payload, "timeout_s": 20}
    with ctx.ws() as ws:
        ws.expect({"type": "reset", "data": {"seed": 0}}, "observation")
        return json.dumps(ws.expect({"type": "step", "data": step}, "observation"))


def _escape_payload(kind: str, secret: Path, escape: Path, port: int, nonce: str) -> str:
    if kind == PY:
        return (
            f"import socket\nprint('RAN', {nonce!r})\n"
            f"for tag, act in (('READ', lambda: open({str(secret)!r}).read()),\n"
            f"                 ('WROTE', lambda: open({str(escape)!r}, 'w').write('x')),\n"
            f"                 ('TCP', lambda: socket.create_connection(('127.0.0.1', {port}), 3))):\n"
            "    try:\n"
            "        out = act(); print(tag, 'ok', out if tag == 'READ' else '')\n"
            "    except Exception as exc:\n"
            "        print(tag, 'denied', type(exc).__name__)\n"
        )
    return (
        f"echo RAN {nonce}; cat {secret} 2>&1; echo x > {escape} 2>&1 && echo WROTE ok; "
        f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo TCP ok || echo TCP denied"
    )


@contextlib.contextmanager
def _sink() -> Iterator[tuple[int, list[str]]]:
    """A TCP listener on 127.0.0.1: its port, and the peers that connected."""
    server = socket.create_server(("127.0.0.1", 0))
    server.settimeout(0.2)
    peers: list[str] = []
    stop = threading.Event()

    def accept() -> None:
        while not stop.is_set():
            try:
                conn, addr = server.accept()
            except OSError:
                continue
            peers.append(f"{addr[0]}:{addr[1]}")
            conn.close()

    thread = threading.Thread(target=accept, name="openenv-validate-sink", daemon=True)
    thread.start()
    try:
        yield server.getsockname()[1], peers
    finally:
        stop.set()
        thread.join(timeout=2)
        server.close()


class Escape:
    """What code run in a session could do outside it (``None``: not measured)."""

    def __init__(self) -> None:
        self.read: bool | None = None
        self.wrote: bool | None = None
        self.tcp: bool | None = None
        #: the probe's output came back (else a missing read or connection proves nothing)
        self.ran = False
        self.note = ""


def measure_escape(ctx: Context, kind: str) -> Escape:
    """Submit the escape probe once; judge it by the validator's own side."""
    out = Escape()
    folder = Path(tempfile.mkdtemp(prefix="openenv-validate-"))
    try:
        os.chmod(folder, 0o700)
        token = secrets.token_hex(16)
        secret, escape = folder / "secret.txt", folder / "escape.txt"
        secret.write_text(token)
        secret.chmod(0o600)
        with _sink() as (port, peers):
            try:
                nonce = secrets.token_hex(8)
                text = _submit(ctx, kind, _escape_payload(kind, secret, escape, port, nonce))
            except ProbeError as exc:
                out.note = f"the probe's episode failed: {str(exc)[:160]}"
                return out
            # the listener sees a connection only once it is accepted
            for _ in range(10):
                if peers:
                    break
                threading.Event().wait(0.1)
        out.ran = f"RAN {nonce}" in text
        out.read = token in text
        out.wrote = escape.exists()
        out.tcp = bool(peers) or "TCP ok" in text
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def _net_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def host_containment(ctx: Context, kind: str | None, escape: Escape | None, results: Results) -> None:
    if kind is None:
        members = sorted((ctx.schema or {}).get("action", {}).get("properties", {}))
        results.add(
            "runtime.host_containment",
            CheckStatus.PASS,
            "the actions run no code or commands (action members: "
            + (", ".join(members) or "none")
            + "): nothing the agent sends reaches the host",
            measured={"action_kind": None, "action_members": members},
        )
        return
    assert escape is not None
    if escape.read is None:
        results.add(
            "runtime.host_containment",
            CheckStatus.FAIL,
            escape.note,
            remediation="let a session run code that fails without ending the server",
        )
        return
    problems = []
    if escape.read:
        problems.append("submitted code read a file the validator keeps outside the session")
    if escape.wrote:
        problems.append("submitted code wrote a file next to it")
    if not problems and not escape.ran:
        results.add(
            "runtime.host_containment",
            CheckStatus.SKIP,
            "the probe's output never came back: a read that did not happen proves nothing",
        )
        return
    results.add(
        "runtime.host_containment",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems
        or [f"submitted {kind} could neither read nor write the validator's private folder on the host"],
        remediation="run each session's code in a sandbox with its own filesystem view (openenv.sandbox)",
        measured={"action_kind": kind, "read": escape.read, "wrote": escape.wrote},
    )


def network_policy(
    ctx: Context,
    kind: str | None,
    escape: Escape | None,
    block: ValidationBlock | None,
    pid: int | None,
    results: Results,
) -> None:
    mode = block.network.mode if block is not None else "public"
    measured: dict[str, Any] = {"declared": mode}
    if kind is not None and escape is not None and escape.tcp is not None and (escape.ran or escape.tcp):
        reachable = escape.tcp
        where = f"submitted {kind} in a session"
    elif kind is None and pid is not None and _net_ns(pid) is not None:
        reachable = _net_ns(pid) == _net_ns(os.getpid())
        where = "the server process (its network namespace is " + ("the host's)" if reachable else "its own)")
    else:
        results.add(
            "runtime.network_policy",
            CheckStatus.SKIP,
            "the server runs elsewhere (a URL): its network cannot be measured from here"
            if pid is None
            else (
                escape.note if escape is not None and escape.note else "the probe's output never came back"
            ),
        )
        return
    measured["tcp_to_host_loopback"] = reachable
    want = mode != "no-network"
    ok = reachable == want
    seen = "reached" if reachable else "could not reach"
    results.add(
        "runtime.network_policy",
        CheckStatus.PASS if ok else CheckStatus.FAIL,
        f"declared network mode {mode}; {where} {seen} a TCP listener of the validator on 127.0.0.1",
        remediation=(
            "declare validation.network.mode: no-network, or give the sessions the network they declare"
            if not reachable
            else "run the sessions without network (openenv.sandbox), or declare the network they have"
        ),
        measured=measured,
    )


def run_containment(ctx: Context, block: ValidationBlock | None, pid: int | None, results: Results) -> None:
    """Both ids; one submitted probe serves both."""
    kind = action_kind(ctx.schema["action"]) if ctx.schema else None
    escape = measure_escape(ctx, kind) if kind is not None else None
    results.start()
    host_containment(ctx, kind, escape, results)
    network_policy(ctx, kind, escape, block, pid, results)

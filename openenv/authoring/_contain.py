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
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from .._exceptions import ProbeError
from .._vmanifest import ValidationBlock
from ._checks import Context
from ._hacking import PY, SHELL, action_kind
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


def _short_payload(kind: str, secret: Path, escape: Path, port: int) -> str:
    """One line of each (a text field is often short): write, connect, read."""
    if kind == PY:
        return (
            f"import socket;open({str(escape)!r},'w').write('x');"
            f"socket.create_connection(('127.0.0.1',{port}),3);print(open({str(secret)!r}).read())"
        )
    return f"echo x>{escape};(exec 3<>/dev/tcp/127.0.0.1/{port});cat {secret}"


@contextlib.contextmanager
def _sink() -> Iterator[tuple[int, Callable[[], list[str]]]]:
    """A TCP listener on 127.0.0.1: its port, and a call that names the peers whose
    connections completed. The kernel completes a handshake without ``accept``, so a
    connection made before the step's reply came is already queued: no waiting."""
    server = socket.create_server(("127.0.0.1", 0))
    server.setblocking(False)

    def drain() -> list[str]:
        peers: list[str] = []
        while True:
            try:
                conn, addr = server.accept()
            except OSError:  # BlockingIOError: the queue is empty
                return peers
            peers.append(f"{addr[0]}:{addr[1]}")
            conn.close()

    try:
        yield server.getsockname()[1], drain
    finally:
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


Send = Callable[[Path, Path, int, str], str]


def _measure(send: Send, echoed: bool) -> Escape:
    """Make the private folder and the listener, ``send`` the probe, judge by our side.
    ``echoed``: the replies may repeat the payload's text, so only what happened on the
    host counts (a file written, a connection made, the secret read back)."""
    out = Escape()
    folder = Path(tempfile.mkdtemp(prefix="openenv-validate-"))
    try:
        os.chmod(folder, 0o700)
        token = secrets.token_hex(16)
        secret, escape = folder / "secret.txt", folder / "escape.txt"
        secret.write_text(token)
        secret.chmod(0o600)
        with _sink() as (port, drain):
            nonce = secrets.token_hex(8)
            try:
                text = send(secret, escape, port, nonce)
            except ProbeError as exc:
                out.note = f"the probe's episode failed: {str(exc)[:160]}"
                return out
            peers = drain()
        out.ran = not echoed and f"RAN {nonce}" in text
        out.read = token in text
        out.wrote = escape.exists()
        out.tcp = bool(peers) or (not echoed and "TCP ok" in text)
        return out
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def measure_escape(ctx: Context, kind: str) -> Escape:
    """The escape probe as the code or commands the env's actions run."""
    return _measure(
        lambda secret, escape, port, nonce: _submit(
            ctx, kind, _escape_payload(kind, secret, escape, port, nonce)
        ),
        echoed=False,
    )


def text_fields(ctx: Context) -> list[str]:
    """The action's string members (where an env that ran text would take it from)."""
    props = (ctx.schema or {}).get("action", {}).get("properties", {})
    return sorted(k for k, v in props.items() if isinstance(v, dict) and v.get("type") == "string")


def measure_text_escape(ctx: Context, fields: list[str]) -> Escape:
    """For an env whose actions run nothing: the Python and the shell probe, each sent
    as every text member of an action; a host that sees either act was running it."""

    def send(secret: Path, escape: Path, port: int, nonce: str) -> str:
        texts = []
        del nonce  # an echo of the text would repeat it: only the host's side counts
        for kind in (PY, SHELL):
            payload = _short_payload(kind, secret, escape, port)
            action = {**(ctx.action(0) if ctx.actions else {}), **dict.fromkeys(fields, payload)}
            with ctx.ws() as ws:
                ws.expect({"type": "reset", "data": {"seed": 0}}, "observation")
                texts.append(json.dumps(ws.expect({"type": "step", "data": action}, "observation")))
        return "\n".join(texts)

    return _measure(send, echoed=True)


def _net_ns(pid: int) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/net")
    except OSError:
        return None


def _text_containment(ctx: Context, escape: Escape | None, results: Results) -> None:
    members = sorted((ctx.schema or {}).get("action", {}).get("properties", {}))
    fields = text_fields(ctx)
    measured: dict[str, Any] = {"action_kind": None, "action_members": members, "text_fields": fields}
    if escape is not None and escape.read is not None:
        measured.update(read=escape.read, wrote=escape.wrote, tcp=escape.tcp)
        acted = [
            what
            for what, seen in (("read the validator's file", escape.read), ("wrote beside it", escape.wrote))
            if seen
        ] + (["connected to its listener"] if escape.tcp else [])
        if acted:
            results.add(
                "runtime.host_containment",
                CheckStatus.FAIL,
                f"the escape probe, sent as the action's text ({', '.join(fields)}), ran: it "
                + ", ".join(acted),
                remediation="never run an action's text as code or commands outside a sandbox",
                measured=measured,
            )
            return
        how = f"; the escape probe sent as its text ({', '.join(fields)}), Python and shell, touched nothing"
    elif fields:
        how = f"; the probe could not be sent as its text: {escape.note if escape else 'no reply'}"
    else:
        how = ""
    results.add(
        "runtime.host_containment",
        CheckStatus.PASS,
        "the actions run no code or commands (action members: " + (", ".join(members) or "none") + ")" + how,
        measured=measured,
    )


def host_containment(ctx: Context, kind: str | None, escape: Escape | None, results: Results) -> None:
    if kind is None:
        _text_containment(ctx, escape, results)
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
    if kind is not None:
        escape: Escape | None = measure_escape(ctx, kind)
    else:
        fields = text_fields(ctx)
        escape = measure_text_escape(ctx, fields) if fields else None
    results.start()
    host_containment(ctx, kind, escape, results)
    network_policy(
        ctx, kind if kind is not None else None, escape if kind is not None else None, block, pid, results
    )

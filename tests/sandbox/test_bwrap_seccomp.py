"""The seccomp filter of the bubblewrap level: each syscall no task needs is refused
with EPERM by the filter itself (without the filter the kernel answers otherwise)."""

from __future__ import annotations

import json
import platform

import pytest

from openenv.sandbox import Isolation, Sandbox, SandboxConfig
from openenv.sandbox._bwrap import bwrap_works

BWRAP_WHY = bwrap_works(None)
pytestmark = [
    pytest.mark.skipif(BWRAP_WHY != "", reason=f"bubblewrap does not work here: {BWRAP_WHY}"),
    pytest.mark.skipif(platform.machine() != "x86_64", reason="the syscall numbers below are x86_64's"),
]

#: name -> (x86_64 number, arguments); each is called once, the errno text reported.
CALLS = {
    "unshare": (272, (0x10000000,)),  # CLONE_NEWUSER: a nested user namespace
    "mount": (165, (b"none", b"/tmp", b"tmpfs", 0, None)),
    "setns": (308, (0, 0)),
    "ptrace": (101, (0, 0, 0, 0)),  # PTRACE_TRACEME
    "keyctl": (250, (0, 0, 0, 0)),
    "bpf": (321, (0, 0, 0)),
    "add_key": (248, (b"user", b"k", b"v", 1, -3)),
}
PROBE = f"""
import ctypes, json, os
libc = ctypes.CDLL(None, use_errno=True)
out = {{}}
for name, (nr, args) in {CALLS!r}.items():
    out[name] = "ok" if libc.syscall(nr, *args) == 0 else os.strerror(ctypes.get_errno())
print(json.dumps(out))
"""


def probe(seccomp: bool) -> dict[str, str]:
    with Sandbox(SandboxConfig(level="auto", seccomp=seccomp)) as box:  # type: ignore[arg-type]
        assert box.isolation is Isolation.BWRAP
        done = box.run(["python3", "-c", PROBE], timeout_s=30)
    result: dict[str, str] = json.loads(done.stdout.decode().strip().splitlines()[-1])
    return result


def test_each_denied_syscall_gets_eperm_under_the_filter() -> None:
    assert probe(seccomp=True) == dict.fromkeys(CALLS, "Operation not permitted")


def test_the_filter_is_what_denies_them() -> None:
    unfiltered = probe(seccomp=False)
    # without the filter these reach the kernel and fail (or succeed) for other reasons
    assert [
        n
        for n in ("setns", "ptrace", "keyctl", "bpf", "add_key")
        if unfiltered[n] == "Operation not permitted"
    ] == []


def test_no_nested_user_namespace_is_reported() -> None:
    with Sandbox(SandboxConfig(level="auto")) as box:  # type: ignore[arg-type]
        assert box.describe()["nested_userns"] is False

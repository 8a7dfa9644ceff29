"""The sandbox's seccomp filter: system calls no task needs, and the network.

One classic-BPF program, built here and installed two ways:

- under bubblewrap, bubblewrap loads it (``--seccomp FD``) just before it runs the
  command, inside the new namespaces;
- at the ``rlimits`` level a tiny Python launcher installs it and then ``exec``s the
  real command (there is no bubblewrap to do it).

Either way it is inherited by every descendant and cannot be removed. It refuses,
with ``EPERM``: ``DENIED`` (mounting, namespaces, tracing, kernel keys, BPF, perf,
kernel modules and kexec, swap, reboot, file handles, userfaultfd), ``clone`` and
``unshare`` with a new-namespace flag (no nested user or other namespaces), x32
system calls and foreign architectures. ``clone3`` fails with ``ENOSYS`` (its flags
sit in memory a filter cannot read), so the C library falls back to ``clone``, which
the filter can check. With ``network=False`` (the ``rlimits`` level: no network
namespace) ``socket()`` also fails, with ``EACCES``, for every family but
``AF_UNIX``, and so does ``io_uring_setup`` (which could open sockets past the
filter). It needs ``no_new_privs``, so set-uid programs gain nothing under it.
"""

from __future__ import annotations

import errno
import hashlib
import os
import platform
import shutil
import struct
import sys
import tempfile
from dataclasses import dataclass

#: Refused outright (``EPERM``), by name.
DENIED = (
    "mount", "umount2", "pivot_root", "open_tree", "move_mount", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "setns", "ptrace", "keyctl", "add_key",
    "request_key", "bpf", "perf_event_open", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "swapon", "swapoff", "reboot",
    "open_by_handle_at", "userfaultfd",
)  # fmt: skip

#: CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET; unshare
#: also takes CLONE_NEWTIME (0x80, which in ``clone`` is part of the exit signal).
CLONE_NAMESPACES = 0x7E020000
UNSHARE_NAMESPACES = CLONE_NAMESPACES | 0x80


@dataclass(frozen=True, slots=True)
class Arch:
    """One architecture's ``AUDIT_ARCH_*`` value and system call numbers."""

    audit: int
    numbers: dict[str, int]


ARCHES = {
    "x86_64": Arch(0xC000003E, {
        "socket": 41, "io_uring_setup": 425, "clone": 56, "clone3": 435, "unshare": 272,
        "mount": 165, "umount2": 166, "pivot_root": 155, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "setns": 308, "ptrace": 101, "keyctl": 250, "add_key": 248, "request_key": 249,
        "bpf": 321, "perf_event_open": 298, "kexec_load": 246, "kexec_file_load": 320,
        "init_module": 175, "finit_module": 313, "delete_module": 176, "swapon": 167,
        "swapoff": 168, "reboot": 169, "open_by_handle_at": 304, "userfaultfd": 323,
    }),
    "aarch64": Arch(0xC00000B7, {
        "socket": 198, "io_uring_setup": 425, "clone": 220, "clone3": 435, "unshare": 97,
        "mount": 40, "umount2": 39, "pivot_root": 41, "open_tree": 428, "move_mount": 429,
        "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433, "mount_setattr": 442,
        "setns": 268, "ptrace": 117, "keyctl": 219, "add_key": 217, "request_key": 218,
        "bpf": 280, "perf_event_open": 241, "kexec_load": 104, "kexec_file_load": 294,
        "init_module": 105, "finit_module": 273, "delete_module": 106, "swapon": 224,
        "swapoff": 225, "reboot": 142, "open_by_handle_at": 265, "userfaultfd": 282,
    }),
}  # fmt: skip

# classic BPF opcodes (linux/filter.h) and seccomp return values (linux/seccomp.h)
_LD_ABS, _JEQ, _JGE, _JSET, _RET = 0x20, 0x15, 0x35, 0x45, 0x06
_ALLOW = 0x7FFF0000
_ERRNO = 0x00050000
_X32_BIT = 0x40000000
_AF_UNIX = 1
# offsets into struct seccomp_data: nr, arch, args[0] (its low 32 bits, little-endian)
_NR, _ARCH, _ARG0 = 0, 4, 16


def current_arch() -> Arch | None:
    """This machine's ``Arch``, or None where the filter does not know it."""
    return ARCHES.get(platform.machine())


def build_filter(arch: Arch, *, network: bool) -> bytes:
    """The filter as ``struct sock_filter`` bytes; ``network=False`` adds the socket rule.

    Jumps are written to labels and resolved here (classic BPF jumps only forward).
    """
    deny, eacces, enosys = _ERRNO | errno.EPERM, _ERRNO | errno.EACCES, _ERRNO | errno.ENOSYS
    nr = arch.numbers
    # (code, jump-if-true label, jump-if-false label, k); None: the next instruction
    prog: list[tuple[int, str | None, str | None, int]] = [
        (_LD_ABS, None, None, _ARCH),
        (_JEQ, None, "deny", arch.audit),
        (_LD_ABS, None, None, _NR),
        (_JGE, "deny", None, _X32_BIT),
        (_JEQ, "enosys", None, nr["clone3"]),
        (_JEQ, "clone", None, nr["clone"]),
        (_JEQ, "unshare", None, nr["unshare"]),
    ]
    prog += [(_JEQ, "deny", None, nr[name]) for name in DENIED]
    if not network:
        prog += [(_JEQ, "eacces", None, nr["io_uring_setup"]), (_JEQ, "socket", None, nr["socket"])]
    prog += [(_RET, None, None, _ALLOW)]
    labels: dict[str, int] = {}

    def label(name: str, *body: tuple[int, str | None, str | None, int]) -> None:
        labels[name] = len(prog)
        prog.extend(body)

    label(
        "clone",
        (_LD_ABS, None, None, _ARG0), (_JSET, "deny", None, CLONE_NAMESPACES), (_RET, None, None, _ALLOW),
    )
    label(
        "unshare",
        (_LD_ABS, None, None, _ARG0), (_JSET, "deny", None, UNSHARE_NAMESPACES), (_RET, None, None, _ALLOW),
    )
    if not network:
        label(
            "socket",
            (_LD_ABS, None, None, _ARG0), (_JEQ, None, "eacces", _AF_UNIX), (_RET, None, None, _ALLOW),
        )
        label("eacces", (_RET, None, None, eacces))
    label("enosys", (_RET, None, None, enosys))
    label("deny", (_RET, None, None, deny))

    def offset(at: int, target: str | None) -> int:
        if target is None:
            return 0
        jump = labels[target] - at - 1
        assert 0 <= jump < 256, "a classic BPF jump reaches at most 255 instructions"
        return jump

    return b"".join(
        struct.pack("HBBI", code, offset(i, jt), offset(i, jf), k) for i, (code, jt, jf, k) in enumerate(prog)
    )


def filter_file(directory: str, *, network: bool) -> str | None:
    """The path of a file in ``directory`` holding this machine's filter (written once,
    named by its content), for bubblewrap's ``--seccomp``; None on an architecture the
    filter does not know."""
    arch = current_arch()
    if arch is None:
        return None
    program = build_filter(arch, network=network)
    path = os.path.join(directory, f".seccomp-{hashlib.sha256(program).hexdigest()[:16]}.bpf")
    if not os.path.exists(path):
        fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(program)
        os.replace(tmp, path)
    return path


_LAUNCHER = r"""
import ctypes, os, signal, sys
raw = bytes.fromhex(sys.argv[1])
buf = ctypes.create_string_buffer(raw, len(raw))
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Prog(len(raw) // 8, ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
if libc.prctl(38, 1, None, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):  # NO_NEW_PRIVS, SECCOMP
    sys.exit("openenv sandbox: could not install the seccomp filter: " + os.strerror(ctypes.get_errno()))
for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; exec would keep that
    signal.signal(sig, signal.SIG_DFL)
os.execvp(sys.argv[2], sys.argv[2:])
"""


def python_for_sandbox() -> str:
    """A system interpreter every uid can run (the server's venv may sit in /root)."""
    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable


def launcher_prefix(*, network: bool) -> list[str] | None:
    """The launcher command line (to put before the real one), or None on an
    architecture the filter does not know."""
    arch = current_arch()
    if arch is None:
        return None
    program = build_filter(arch, network=network).hex()
    return [python_for_sandbox(), "-S", "-E", "-s", "-c", _LAUNCHER, program]


def network_filter_prefix() -> list[str] | None:
    """``launcher_prefix(network=False)``: the filter with the socket rule."""
    return launcher_prefix(network=False)

"""A seccomp filter that takes the network away where there is no network namespace.

At the ``rlimits`` level (no bubblewrap: inside Docker, or ``--sandbox none``) each
process starts through a tiny Python launcher that installs a filter and then
``exec``s the real command. The filter, inherited by every descendant and
irremovable: ``socket()`` fails with ``EACCES`` for every family but ``AF_UNIX``;
``io_uring_setup`` (which could open sockets past the filter), x32 system calls and
foreign architectures (32-bit ``socketcall``) fail too. It needs ``no_new_privs``,
so set-uid programs do not gain privileges under it.
"""

from __future__ import annotations

import platform
import shutil
import sys

#: machine -> (AUDIT_ARCH_*, __NR_socket, __NR_io_uring_setup)
ARCHES = {
    "x86_64": (0xC000003E, 41, 425),
    "aarch64": (0xC00000B7, 198, 425),
}

_LAUNCHER = r"""
import ctypes, os, struct, sys
arch, nr_socket, nr_uring = (int(x) for x in sys.argv[1:4])
LD, JEQ, JGE, RET = 0x20, 0x15, 0x35, 0x06
ALLOW, DENY = 0x7FFF0000, 0x00050000 | 13  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EACCES
prog = [
    (LD, 0, 0, 4), (JEQ, 0, 7, arch), (LD, 0, 0, 0), (JGE, 5, 0, 0x40000000),
    (JEQ, 4, 0, nr_uring), (JEQ, 0, 2, nr_socket), (LD, 0, 0, 16), (JEQ, 0, 1, 1),
    (RET, 0, 0, ALLOW), (RET, 0, 0, DENY),
]
raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
buf = ctypes.create_string_buffer(raw, len(raw))
class Prog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
fprog = Prog(len(prog), ctypes.addressof(buf))
libc = ctypes.CDLL(None, use_errno=True)
libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_void_p, ctypes.c_ulong, ctypes.c_ulong]
if libc.prctl(38, 1, None, 0, 0) or libc.prctl(22, 2, ctypes.byref(fprog), 0, 0):  # NO_NEW_PRIVS, SECCOMP
    sys.exit("openenv sandbox: could not install the network filter: " + os.strerror(ctypes.get_errno()))
import signal
for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # Python ignores them; exec would keep that
    signal.signal(sig, signal.SIG_DFL)
os.execvp(sys.argv[4], sys.argv[4:])
"""


def python_for_sandbox() -> str:
    """A system interpreter every uid can run (the server's venv may sit in /root)."""
    return shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin") or sys.executable


def network_filter_prefix() -> list[str] | None:
    """The launcher command line (to put before the real one), or None on an
    architecture the filter does not know."""
    arch = ARCHES.get(platform.machine())
    if arch is None:
        return None
    return [python_for_sandbox(), "-S", "-E", "-s", "-c", _LAUNCHER, *(str(x) for x in arch)]

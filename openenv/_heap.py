"""Give freed buffers back to the system: a server's memory returns to where it was.

glibc's malloc serves a large block with ``mmap`` (unmapped again when it is freed) only
up to a threshold that it raises itself each time such a block is freed, up to 32 MiB. A
server that has read one 16 MiB frame therefore takes the next ones from its heap, and
freed heap memory below a live small block stays in the process: one burst of huge
frames could leave a server 85 MB larger for good, depending on where the next small
allocation happened to land. Setting the thresholds once turns the self-raising off:
every block of ``MMAP_THRESHOLD`` bytes or more is its own mapping, returned when freed,
and a free heap top past ``TRIM_THRESHOLD`` is trimmed.

``bound_heap()`` is called once by a server process before it serves. Elsewhere
(another C library, macOS) it does nothing and says so by returning False.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys

__all__ = ["MMAP_THRESHOLD", "TRIM_THRESHOLD", "bound_heap"]

MMAP_THRESHOLD = 256 * 1024
TRIM_THRESHOLD = 1024 * 1024

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameter numbers (malloc.h)
_M_MMAP_THRESHOLD = -3

_done: bool | None = None


def bound_heap() -> bool:
    """Fix glibc's mmap and trim thresholds for this process (idempotent); True when set."""
    global _done
    if _done is not None:
        return _done
    _done = False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):  # not glibc (musl has no mallopt)
        return False
    mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
    mmap_set = bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    _done = mmap_set and bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD))
    return _done

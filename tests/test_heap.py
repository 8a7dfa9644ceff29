"""A server's freed large buffers go back to the system (openenv._heap).

The probe frees 16 MiB blocks that lie below live 100 KB blocks, the order a server's
heap is in after a burst of huge frames with small allocations between them. With
glibc's self-raising mmap threshold the 64 MiB stay in the process (the control run);
with ``bound_heap()`` they are returned (the network chaos test's RSS check failed once
in CI with the heap kept: 50 MB before, 135 MB for 20 s after)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from openenv._heap import bound_heap

PROBE = r"""
import sys
from openenv._heap import bound_heap
if sys.argv[1] == "bound":
    assert bound_heap()
def rss():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
first = b"x" * (16 << 20)
del first  # glibc (unbound) raises its mmap threshold past 16 MiB here
base = rss()
held = []
for i in range(4):
    held.append(b"x" * ((16 << 20) - i * 4096))
    held.append(b"y" * 100_000)
pins = held[1::2]
del held
print(rss() - base)
"""


def _kept_kib(mode: str) -> int:
    argv = [sys.executable, "-c", PROBE, mode]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=True)
    return int(out.stdout.strip())


@pytest.mark.skipif(not bound_heap(), reason="not glibc: its malloc thresholds are glibc's own")
def test_freed_large_blocks_leave_the_process() -> None:
    assert _kept_kib("control") > 48 * 1024  # the scenario pins memory without the bound
    assert _kept_kib("bound") < 8 * 1024


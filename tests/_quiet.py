"""Whether this host is quiet enough for a latency bound.

A latency figure (a victim's or a bystander's p99) is asserted only on a host whose
1-minute load is at most ``QUIET_LOAD`` a core (the env chaos tests' gate too); past it
the figure is printed, not asserted, and the test says so. What load cannot break (CPU
seconds, memory, the kernel's counters, the order of events) is asserted on any host.
Two full suites at once on this 2-core machine run at load 4-20.
"""

from __future__ import annotations

import os

#: The 1-minute load a core up to which a host counts as quiet.
QUIET_LOAD = 2.0


def quiet_host() -> tuple[bool, str]:
    """Whether the host is quiet enough for a latency bound, and its load in words."""
    load, cores = os.getloadavg()[0], os.cpu_count() or 1
    return load <= QUIET_LOAD * cores, f"load {load:.1f} on {cores} cores (quiet: <= {QUIET_LOAD:g} a core)"

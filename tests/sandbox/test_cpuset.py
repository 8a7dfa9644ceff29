"""Sessions with a ``cpus`` limit are pinned to whole cores, the least used first
(``openenv.sandbox._cpuset``), so a session's busy processes leave other cores free."""

from __future__ import annotations

import pytest

from openenv.sandbox import Sandbox, SandboxConfig
from openenv.sandbox._cgroup import cgroup_host
from openenv.sandbox._config import SessionLimits
from openenv.sandbox._cpuset import CorePicker, parse_cpu_list

HOST, WHY = cgroup_host()
needs_cpuset = pytest.mark.skipif(
    HOST is None or HOST.picker is None,
    reason=f"no cpuset controller with two or more cores for this process ({WHY or 'cpuset not mounted'})",
)


def test_cpu_lists_in_the_kernels_format() -> None:
    assert parse_cpu_list("0-2,5\n") == [0, 1, 2, 5]
    assert parse_cpu_list("3") == [3]
    assert parse_cpu_list("") == []


def test_the_least_used_cores_are_taken_and_given_back() -> None:
    picker = CorePicker([0, 1, 2, 3])
    first, second = picker.take(1), picker.take(2)
    assert first == [0]
    assert second == [1, 2]
    assert picker.take(0.5) == [3]
    assert picker.take(1) == [0]  # every core has one: the lowest again
    picker.give(second)
    assert picker.take(2) == [1, 2]
    assert picker.load() == {0: 2, 1: 1, 2: 1, 3: 1}


def test_no_pinning_without_a_limit_or_when_it_would_take_every_core() -> None:
    picker = CorePicker([0, 1])
    assert picker.take(None) == []
    assert picker.take(2) == []
    assert picker.take(1.5) == []  # two cores: all of them
    assert picker.load() == {0: 0, 1: 0}


def _least_used(load: dict[int, int]) -> int:
    return min(load, key=lambda core: (load[core], core))


@needs_cpuset
def test_two_sessions_get_a_core_each_and_their_processes_stay_on_it() -> None:
    assert HOST is not None
    assert HOST.picker is not None
    config = SandboxConfig(level="auto", session_limits=SessionLimits(cpus=1))  # type: ignore[arg-type]
    before = HOST.picker.load()  # this process's other sessions (another test's) count too
    first = _least_used(before)
    second = _least_used({**before, first: before[first] + 1})
    with Sandbox(config) as a, Sandbox(config) as b:
        assert a._cgroup is not None
        assert b._cgroup is not None
        assert a._cgroup.cores == [first]
        assert b._cgroup.cores == [second]
        if len(set(before.values())) == 1:  # the cores were evenly used: a core each
            assert a._cgroup.cores != b._cgroup.cores
        shown = a.run(["sh", "-c", "grep Cpus_allowed_list /proc/self/status"], timeout_s=10)
        assert shown.stdout.decode().split()[-1] == str(a._cgroup.cores[0])
        made = [path for box in (a, b) for path in box._cgroup.dirs]  # this test's cgroups only
        assert all(path.is_dir() for path in made)
    assert HOST.picker.load() == before
    assert [path for path in made if path.exists()] == []  # other sessions of the host may run


def test_take_exactly_and_hold() -> None:
    picker = CorePicker([0, 1, 2])
    assert picker.take_exactly(2) == [0, 1]
    picker.give([0])
    picker.hold([0])
    assert picker.load() == {0: 1, 1: 1, 2: 0}


@needs_cpuset
def test_a_sandbox_made_ahead_is_pinned_again_by_the_load_when_taken() -> None:
    """Sandboxes made ahead (an env's pool) keep the cores they got then; when a session
    takes one, ``repin`` moves it to the least used cores, its processes with it."""
    assert HOST is not None
    assert HOST.picker is not None
    picker = HOST.picker
    config = SandboxConfig(level="auto", session_limits=SessionLimits(cpus=1))  # type: ignore[arg-type]
    before = picker.load()
    with Sandbox(config) as a, Sandbox(config) as b, Sandbox(config) as c:
        assert a._cgroup is not None
        assert c._cgroup is not None  # on 2 cores it shares a's core
        b.close()  # b's core is free: a, made ahead, is now on the busier one
        load, own = picker.load(), a._cgroup.cores
        expected = sorted(load, key=lambda core: (load[core] - (core in own), core))[:1]
        a.repin()
        assert a._cgroup.cores == expected
        assert sum(picker.load().values()) == sum(load.values())  # moved, not added
        shown = a.run(["sh", "-c", "grep Cpus_allowed_list /proc/self/status"], timeout_s=10)
        assert shown.stdout.decode().split()[-1] == str(expected[0])
    assert picker.load() == before

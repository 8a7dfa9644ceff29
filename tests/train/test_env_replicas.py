"""``train(env_replicas=2)``: the env served as two replicas on the Monarch host, groups
routed by load; a replica killed mid-episode fails only its episodes (counted as
``replica_lost``), the pool replaces it, the run finishes and no replica survives it."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from openenv.train import TrainConfig, read_metrics, train

from ._count_env import CountAction, CountObservation
from ._count_fixtures import SlowCountEnv, small_config

pytest.importorskip("monarch.actor", reason="env replicas run on Monarch (the 'train' extra)")

TARGET = "tests.train.test_env_replicas:MarkedSlowEnv"


class MarkedSlowEnv(SlowCountEnv):
    """``SlowCountEnv`` (steps take 3 s) that marks each step's start with a file named
    by its server's pid in ``$OPENENV_TEST_MARKS``: the test knows which replica is busy."""

    def step(self, action: CountAction) -> CountObservation:
        marks = os.environ.get("OPENENV_TEST_MARKS")
        if marks:
            Path(marks, str(os.getpid())).touch()
        return super().step(action)


def _replica_pids(marks: Path) -> list[int]:
    """Live processes started by this test's ``ReplicaHost`` (``openenv serve TARGET``, their
    environment this test's ``$OPENENV_TEST_MARKS``: another run's replicas are not ours)."""
    ours = f"OPENENV_TEST_MARKS={marks}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                argv = Path(f"/proc/{entry}/cmdline").read_bytes()
                if b"\0serve\0" not in argv or TARGET.encode() not in argv:
                    continue
                environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
                state = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[0]
            except OSError:
                continue
            if ours in environ and state not in ("Z", "X"):
                found.append(int(entry))
    return found


def _kill_a_busy_replica(out: Path, marks: Path, killed: list[int], stop: threading.Event) -> None:
    """After step 0 is logged: SIGKILL the first replica that starts a step (mid-episode)."""
    deadline = time.monotonic() + 240
    while not stop.is_set() and time.monotonic() < deadline and not read_metrics(out):
        time.sleep(0.05)
    for f in marks.iterdir():
        f.unlink()
    while not stop.is_set() and time.monotonic() < deadline:
        busy = [int(f.name) for f in marks.iterdir()]
        if busy:
            seen = _replica_pids(marks)  # the scan below finds this run's replicas (not vacuous)
            os.kill(busy[0], signal.SIGKILL)
            killed.append(busy[0])
            killed.extend(seen)
            return
        time.sleep(0.02)


@pytest.mark.timeout(400)
def test_a_replica_killed_mid_episode_fails_only_its_episodes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    monkeypatch.setenv("OPENENV_TEST_MARKS", str(marks))  # the replicas inherit it
    out = tmp_path / "run"
    # 4 steps: the kill lands in step 1 (or, on a slow machine that logs step 0 late, in
    # step 2), and a step after it shows the replacement serving
    cfg = small_config([TARGET], str(out), steps=4, env_replicas=2, episode_timeout_s=60.0)
    killed: list[int] = []
    stop = threading.Event()
    killer = threading.Thread(target=_kill_a_busy_replica, args=(out, marks, killed, stop), daemon=True)
    killer.start()
    try:
        rows = train(cfg)
    finally:
        stop.set()
        killer.join(timeout=30)
    assert killed[0] in killed[1:], killed  # one kill, of a replica the scan below finds
    assert [r["step"] for r in rows] == [0, 1, 2, 3]  # the run finished
    first, *rest = rows
    assert first["failed"] == 0
    assert first["replica_lost"] == 0
    lost = [i for i, r in enumerate(rest) if r["replica_lost"]]
    assert len(lost) == 1, [r["replica_lost"] for r in rest]  # one kill, one step hit
    assert lost[0] < len(rest) - 1, "the kill landed in the last step: no step after it"
    hit, after = rest[lost[0]], rest[lost[0] + 1]
    assert all(r["failed"] == 0 for r in rest if r is not hit)
    # two groups per replica (routed by load): the killed one's episodes fail, typed
    assert hit["replica_lost"] == hit["failed"] == 8
    assert hit["episodes"] == 8
    assert any("ReplicaLost" in e for e in hit["errors"])
    assert after["failed"] == 0  # its replacement serves the next step
    assert after["episodes"] == 16
    assert TrainConfig.from_file(out / "config.json").env_replicas == 2
    deadline = time.monotonic() + 30
    while _replica_pids(marks) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _replica_pids(marks) == []  # nothing outlives the run

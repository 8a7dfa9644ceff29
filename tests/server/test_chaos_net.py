"""Chaos, the network half (issue 34; issue 27 has the env half): slow clients,
fragment floods, 16 MiB frames, a ping flood that never reads and a page of another origin
(its WebSocket upgrade and no-cors POSTs, each refused 403), all at once, against
``openenv serve`` at its defaults, while a victim session steps. On a quiet host (see
``tests/_quiet.py``; the load is measured before the chaos) the victim's p99 stays at most
50 ms; on a loaded one it is printed, not asserted. On any host the server's memory comes
back within 10% of where it started and every attack is refused."""

from __future__ import annotations

import multiprocessing
import time

import pytest

from .._quiet import quiet_host
from .._wire import call, connect
from ._chaos_net import attack
from ._net import open_fds, rss_kib, served

__all__ = ["served"]  # the fixture, used by name

SECONDS = 8.0


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))]


@pytest.mark.timeout(180)
def test_the_network_chaos_leaves_a_victim_fast_and_memory_where_it_was(served) -> None:
    server = served()
    victim = connect(server.ws_url)
    try:
        call(victim, {"type": "reset"})
        for _ in range(300):  # warm: the baseline is a server that has served
            call(victim, {"type": "step", "data": {"message": "warm"}})
        time.sleep(0.5)
        quiet, load = quiet_host()
        before = rss_kib(server.pid)
        ctx = multiprocessing.get_context("spawn")
        out = ctx.Queue()
        chaos = ctx.Process(target=attack, args=(server.port, SECONDS, out), daemon=True)
        chaos.start()
        time.sleep(1.0)  # the attackers are at it
        took: list[float] = []
        peak = before
        stop = time.monotonic() + SECONDS - 2.0
        while time.monotonic() < stop:
            started = time.perf_counter()
            call(victim, {"type": "step", "data": {"message": "victim"}})
            took.append(time.perf_counter() - started)
            if len(took) % 200 == 0:
                peak = max(peak, rss_kib(server.pid))
        report = out.get(timeout=SECONDS + 60)
        chaos.join(30)
        deadline, after = time.monotonic() + 20, rss_kib(server.pid)
        while after > before * 1.1 and time.monotonic() < deadline:
            time.sleep(0.5)
            after = rss_kib(server.pid)
        assert call(victim, {"type": "step", "data": {"message": "after"}})["type"] == "observation"
    finally:
        victim.close()
    print(f"chaos: {report}; victim {len(took)} steps, p50 {_p(took, 0.5) * 1000:.2f} ms, "
          f"p99 {_p(took, 0.99) * 1000:.2f} ms, max {max(took) * 1000:.1f} ms; "
          f"RSS {before} KiB before, {peak} peak, {after} after; before the chaos {load}")
    if quiet:  # a latency bound on a quiet host only: two suites at once (load 4-20) break it
        assert _p(took, 0.99) <= 0.050, f"victim p99 {_p(took, 0.99) * 1000:.1f} ms; {load}"
    assert after <= before * 1.1, (
        f"RSS {before} KiB before, {after} KiB after; the server holds {open_fds(server.pid)} descriptors")
    assert not report["errors"], report["errors"]
    results = report["results"]
    assert results["huge_frames_refused"] >= 3, results  # every attacker did attack
    assert sum(results["fragment_flood_closes"].values()) >= 2, results
    assert results["ping_flood_bytes"] > 0, results
    assert results["slow_http_opened"] >= 100, results
    answers = results["cross_origin_answers"]  # a page of another origin: refused, every time
    assert set(answers) == {403}, answers
    assert answers[403] >= 30, answers

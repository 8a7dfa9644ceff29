"""Scale over Monarch hosts: sessions, replica scaling, recovery (issue 21).

Every replica is ``openenv serve`` on a host of a local Monarch ``ProcessJob`` mesh,
one replica per host, started and routed by ``MonarchReplicaPool``; the servers get
their settings as ``OPENENV_*`` variables (the provider's ``env``).

* ``sessions``: N echo sessions open at once over the hosts, as named sessions on a
  few connections per replica (``reset_batch`` in chunks), then each stepped once
  (``step_batch``). Time to open them all; server VmRSS per session, per replica,
  (RSS after - RSS before) / its sessions; errors.
* ``scaling``: an env whose step sleeps 50 ms in the server's thread pool
  (``bench/_slow_env.py``); each replica's pool has ``--threads`` threads, so one
  replica serves at most threads / 50 ms steps/s whatever its sessions. Aggregate
  steps/s driving 1, 2 and 4 of the replicas, in interleaved rounds; ratio to linear.
* ``recovery``: SIGKILL a replica's server process (``--kill host``: the host's
  worker and actor processes); seconds from the kill to the first session served by
  the replica the pool started in its place.

Bounded: every wait has a deadline. At the end every process the run started (hosts,
actors, servers) is checked gone.

    .venv/bin/python bench/bench_scale.py --out /tmp/scale.json
    .venv/bin/python bench/bench_scale.py --only sessions --sessions 1024 --hosts 2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import sys
import time
import urllib.request
from typing import Any

from _util import ROOT, cpu_seconds, fmt, loadavg, machine, median, proc_status, raise_nofile, table

from openenv.containers._monarch import MonarchProvider, MonarchReplica, MonarchReplicaPool
from openenv.containers._pool import PoolLease

SETTLE_S = 1.0
SEEN: set[int] = set()  # every host, actor and server pid seen, checked gone at the end


def _note(pool: MonarchReplicaPool) -> None:
    with_pids = pool.provider.pids()
    SEEN.update(with_pids["hosts"] + with_pids["actors"] + with_pids["replicas"])


def _replicas(pool: MonarchReplicaPool) -> list[MonarchReplica]:
    return [r for r in pool.replicas if isinstance(r, MonarchReplica)]


def _active(base_url: str) -> int:
    with urllib.request.urlopen(f"{base_url}/sessions", timeout=10) as r:
        return int(json.load(r)["active_sessions"])


# --- sessions ------------------------------------------------------------------------


async def _open_and_step(
    leases: list[PoolLease], per_conn: int, chunk: int, deadline: float
) -> dict[str, Any]:
    from echo_env import MODELS, EchoAction

    from openenv import AsyncEnvClient

    action = EchoAction(message="hi")
    clients = [AsyncEnvClient(lease.base_url, MODELS, connect_timeout_s=60) for lease in leases]
    errors = {"reset": 0, "step": 0, "wrong": 0}

    async def open_all(ci: int, env: Any) -> list[str]:
        names: list[str] = []
        while len(names) < per_conn and time.monotonic() < deadline:
            batch = [f"c{ci}s{len(names) + i}" for i in range(min(chunk, per_conn - len(names)))]
            results = await env.reset_batch(batch, return_exceptions=True, timeout_s=120)
            errors["reset"] += sum(isinstance(r, BaseException) for r in results)
            names += batch
        return names

    async def step_all(env: Any, names: list[str]) -> None:
        for i in range(0, len(names), chunk):
            part = names[i : i + chunk]
            results = await env.step_batch(dict.fromkeys(part, action), return_exceptions=True, timeout_s=120)
            for r in results:
                if isinstance(r, BaseException):
                    errors["step"] += 1
                elif r.observation.echoed_message != "hi":
                    errors["wrong"] += 1

    try:
        await asyncio.gather(*(env.connect() for env in clients))
        t0 = time.perf_counter()
        named = await asyncio.gather(*(open_all(i, env) for i, env in enumerate(clients)))
        t_open = time.perf_counter() - t0
        t1 = time.perf_counter()
        await asyncio.gather(*(step_all(env, names) for env, names in zip(clients, named, strict=True)))
        t_step = time.perf_counter() - t1
        opened = sum(len(n) for n in named)
        await asyncio.sleep(SETTLE_S)
        after = {lease.base_url: _active(lease.base_url) for lease in leases}
        return {"open_s": t_open, "step_s": t_step, "opened": opened, "errors": errors, "active": after}
    finally:
        await asyncio.gather(*(env.close() for env in clients), return_exceptions=True)


def _probe(base_url: str) -> None:
    """One reset on a throwaway connection: the server's lazy imports are done."""
    from echo_env import MODELS

    from openenv import EnvClient

    with EnvClient(base_url, MODELS) as env:
        env.reset()


def bench_sessions(hosts: int, sessions: int, conns: int, chunk: int, max_s: float) -> dict[str, Any]:
    per_replica = sessions // hosts
    per_conn = per_replica // conns
    env = {"OPENENV_MAX_SESSIONS": str(per_replica + 64), "OPENENV_LOG_LEVEL": "warning",
           "OPENENV_MAX_SESSIONS_PER_CLIENT": "0"}  # one client (the bench) fills each replica
    t0 = time.perf_counter()
    pool = MonarchReplicaPool(MonarchProvider("echo", hosts=hosts, env=env, lease_s=20), hosts).open()
    try:
        t_up = time.perf_counter() - t0
        _note(pool)
        reps = _replicas(pool)
        for r in reps:
            _probe(r.base_url)
        time.sleep(SETTLE_S)
        before = {r.base_url: proc_status(r.pid) for r in reps}
        cpu0 = {r.base_url: cpu_seconds(r.pid) for r in reps}
        leases = [pool.start() for _ in range(hosts * conns)]  # least-loaded: conns per replica
        deadline = time.monotonic() + max_s
        out = asyncio.run(_open_and_step(leases, per_conn, chunk, deadline))
        after = {r.base_url: proc_status(r.pid) for r in reps}
        cpu = {r.base_url: cpu_seconds(r.pid) - cpu0[r.base_url] for r in reps}
        for lease in leases:
            lease.stop()
        per_rep = []
        for r in reps:
            n = out["active"].get(r.base_url, 0)
            rss0, rss1 = before[r.base_url]["VmRSS"], after[r.base_url]["VmRSS"]
            per_rep.append(
                {
                    "host": r.host,
                    "sessions": n,
                    "rss_before_kib": rss0,
                    "rss_after_kib": rss1,
                    "kib_per_session": (rss1 - rss0) / n if n else float("nan"),
                    "threads": after[r.base_url]["Threads"],
                    "server_cpu_s": cpu[r.base_url],
                }
            )
    finally:
        pool.stop()
    out.update(hosts=hosts, connections=hosts * conns, chunk=chunk, hosts_up_s=t_up, replicas=per_rep)
    out["sessions_requested"] = sessions
    out["active_total"] = sum(out.pop("active").values())
    return out


def sessions_table(r: dict[str, Any]) -> str:
    rows = [
        [
            f"host {p['host']}",
            fmt(p["sessions"]),
            fmt(p["rss_before_kib"]),
            fmt(p["rss_after_kib"]),
            fmt(p["kib_per_session"], 2),
            fmt(p["threads"]),
            fmt(p["server_cpu_s"], 2),
        ]
        for p in r["replicas"]
    ]
    heads = [
        "replica",
        "open sessions",
        "VmRSS before KiB",
        "VmRSS after KiB",
        "KiB/session",
        "threads",
        "server CPU s",
    ]
    errs = r["errors"]
    head = (
        f"{r['active_total']:,} sessions open at once ({r['opened']:,} reset) on {r['hosts']} hosts, "
        f"{r['connections']} connections, reset_batch chunks of {r['chunk']}: opened in {r['open_s']:.2f} s "
        f"({r['opened'] / r['open_s']:,.0f} sessions/s), all stepped once in {r['step_s']:.2f} s; "
        f"errors: {errs['reset']} reset, {errs['step']} step, {errs['wrong']} wrong observations; "
        f"hosts and replicas up in {r['hosts_up_s']:.1f} s"
    )
    return head + "\n\n" + table(heads, rows)


# --- scaling -------------------------------------------------------------------------


async def _drive(
    urls: list[str], conns: int, per_conn: int, warm_s: float, window_s: float
) -> dict[str, Any]:
    """``conns`` connections per URL, each stepping its ``per_conn`` named sessions with
    ``step_batch`` back to back; steps counted inside the window after a warm-up."""
    from echo_env import MODELS, EchoAction

    from openenv import AsyncEnvClient

    action = EchoAction(message="x")
    clients = [AsyncEnvClient(u, MODELS, connect_timeout_s=60) for u in urls for _ in range(conns)]
    counted = [0]
    errors = [0]

    async def loop(ci: int, env: Any, start: float, stop: float) -> None:
        names = [f"c{ci}s{i}" for i in range(per_conn)]
        await env.reset_batch(names, timeout_s=60)
        batch = dict.fromkeys(names, action)
        while time.perf_counter() < stop:
            results = await env.step_batch(batch, return_exceptions=True, timeout_s=60)
            done = time.perf_counter()
            bad = sum(isinstance(r, BaseException) for r in results)
            errors[0] += bad
            if start <= done <= stop:
                counted[0] += len(results) - bad

    try:
        await asyncio.gather(*(env.connect() for env in clients))
        start = time.perf_counter() + warm_s
        stop = start + window_s
        await asyncio.gather(*(loop(i, env, start, stop) for i, env in enumerate(clients)))
    finally:
        await asyncio.gather(*(env.close() for env in clients), return_exceptions=True)
    return {"steps": counted[0], "steps_per_s": counted[0] / window_s, "errors": errors[0]}


def bench_scaling(
    hosts: int, threads: int, conns: int, per_conn: int, rounds: int, warm_s: float, window_s: float
) -> dict[str, Any]:
    env = {
        "PYTHONPATH": str(ROOT),
        "OPENENV_THREAD_WORKERS": str(threads),
        "OPENENV_LOG_LEVEL": "warning",
    }
    counts = [n for n in (1, 2, 4, 8) if n <= hosts]
    pool = MonarchReplicaPool(
        MonarchProvider("bench._slow_env:SlowEnv", hosts=hosts, env=env, lease_s=20), hosts
    )
    pool.open()
    rates: dict[int, list[float]] = {n: [] for n in counts}
    cpu_us: dict[int, list[float]] = {n: [] for n in counts}
    errors = 0
    try:
        _note(pool)
        reps = _replicas(pool)
        for _ in range(rounds):
            for n in counts:
                used = reps[:n]
                cpu0 = sum(cpu_seconds(r.pid) for r in used)
                res = asyncio.run(_drive([r.base_url for r in used], conns, per_conn, warm_s, window_s))
                cpu1 = sum(cpu_seconds(r.pid) for r in used)
                rates[n].append(res["steps_per_s"])
                total = res["steps"] * (warm_s + window_s) / window_s
                cpu_us[n].append((cpu1 - cpu0) / total * 1e6 if total else float("nan"))
                errors += res["errors"]
                print(f"  scaling: {n} replica(s) {res['steps_per_s']:,.0f} steps/s", flush=True)
    finally:
        pool.stop()
    slow_s = 0.05
    ideal = threads / slow_s
    med = {n: median(rates[n]) for n in counts}
    return {
        "hosts": hosts,
        "threads": threads,
        "sessions_per_replica": conns * per_conn,
        "connections_per_replica": conns,
        "window_s": window_s,
        "rounds": rounds,
        "ideal_per_replica": ideal,
        "rates": {str(n): rates[n] for n in counts},
        "median": {str(n): med[n] for n in counts},
        "ratio_to_linear": {str(n): med[n] / (n * med[1]) for n in counts},
        "server_cpu_us_per_step": {str(n): median(cpu_us[n]) for n in counts},
        "errors": errors,
    }


def scaling_table(r: dict[str, Any]) -> str:
    rows = []
    for n, med in r["median"].items():
        rates = r["rates"][n]
        rows.append(
            [
                n,
                fmt(med, 0),
                f"{min(rates):,.0f}-{max(rates):,.0f}",
                fmt(med / (int(n) * r["ideal_per_replica"]), 2),
                fmt(r["ratio_to_linear"][n], 2),
                fmt(r["server_cpu_us_per_step"][n], 0),
            ]
        )
    heads = [
        "replicas",
        "steps/s (median)",
        "range",
        "of ideal",
        "ratio to linear (vs 1 replica x n)",
        "server CPU us/step",
    ]
    head = (
        f"50 ms per step, {r['threads']} env threads per replica "
        f"(ideal {r['ideal_per_replica']:,.0f} steps/s each), "
        f"{r['sessions_per_replica']} named sessions per replica "
        f"on {r['connections_per_replica']} connections, "
        f"{r['rounds']} interleaved rounds of {r['window_s']:.0f} s; errors: {r['errors']}"
    )
    return head + "\n\n" + table(heads, rows)


# --- recovery ------------------------------------------------------------------------


def _kill(pool: MonarchReplicaPool, victim: MonarchReplica, how: str) -> None:
    if how == "replica":
        os.kill(victim.pid, signal.SIGKILL)
        return
    host_pid = pool.provider.pids()["hosts"][victim.host]
    actor_pid = int(pool.provider.call(victim.host, "pid"))
    os.kill(host_pid, signal.SIGKILL)
    os.kill(actor_pid, signal.SIGKILL)


def bench_recovery(hosts: int, repeats: int, how: str, max_s: float) -> dict[str, Any]:
    from echo_env import MODELS, EchoAction

    from openenv import EnvClient

    if how not in ("replica", "host"):
        raise SystemExit(f"--kill: replica or host, not {how!r}")
    if how == "host" and repeats >= hosts:
        raise SystemExit("--kill host needs more hosts than repeats (a killed host stays lost)")
    pool = MonarchReplicaPool(MonarchProvider("echo", hosts=hosts, lease_s=20), hosts).open()
    times: list[float] = []
    served_by_others: list[int] = []
    failures: list[int] = []
    try:
        _note(pool)
        for rep in range(repeats):
            reps = _replicas(pool)
            victim = reps[rep % len(reps)]
            old = {r.base_url for r in reps}
            held: list[PoolLease] = []
            other = failed = 0
            t0 = time.perf_counter()
            _kill(pool, victim, how)
            try:
                while time.perf_counter() - t0 < max_s:
                    lease = pool.start()  # replaces the dead replica first (blocking)
                    held.append(lease)
                    try:  # the dead replica may still be leased while its last /health is trusted
                        with EnvClient(lease.base_url, MODELS, connect_timeout_s=30) as env:
                            env.reset()
                            ok = env.step(EchoAction(message="r")).observation.echoed_message == "r"
                    except Exception:
                        ok = False
                        failed += 1
                    if lease.base_url not in old and ok:
                        times.append(time.perf_counter() - t0)
                        break
                    other += ok
                else:
                    times.append(float("nan"))
            finally:
                for lease in held:
                    lease.stop()
            served_by_others.append(other)
            failures.append(failed)
            SEEN.update(r.pid for r in pool.provider.replicas)  # no host call: one may be gone
            print(f"  recovery ({how}) {rep + 1}: {times[-1]:.2f} s", flush=True)
    finally:
        replaced = pool.replaced
        pool.stop()
    ok = [t for t in times if t == t]
    return {
        "hosts": hosts,
        "kill": how,
        "times_s": times,
        "median_s": median(times),
        "range_s": [min(ok), max(ok)] if ok else None,
        "replaced": replaced,
        "sessions_served_by_other_replicas_meanwhile": served_by_others,
        "failed_session_attempts": failures,
    }


def recovery_table(r: dict[str, Any]) -> str:
    rows = [
        [i + 1, fmt(t, 2), n, f]
        for i, (t, n, f) in enumerate(
            zip(
                r["times_s"],
                r["sessions_served_by_other_replicas_meanwhile"],
                r["failed_session_attempts"],
                strict=True,
            )
        )
    ]
    what = (
        "its server process SIGKILLed"
        if r["kill"] == "replica"
        else "its host's worker and actor processes SIGKILLed"
    )
    lo, hi = (fmt(x, 2) for x in (r["range_s"] or [float("nan")] * 2))
    head = (
        f"{r['hosts']} hosts, one replica each; a replica {what}; kill -> first session (reset + step) "
        f"on the replacement: median {r['median_s']:.2f} s, range {lo}-{hi} s; "
        f"replicas replaced: {r['replaced']}"
    )
    return (
        head
        + "\n\n"
        + table(
            [
                "repeat",
                "kill -> served by replacement, s",
                "sessions on other replicas first",
                "failed tries",
            ],
            rows,
        )
    )


# --- main ----------------------------------------------------------------------------


def survivors(within_s: float = 40.0) -> list[int]:
    """Pids of SEEN still running after ``within_s`` (zombies count as gone)."""
    import psutil

    deadline = time.monotonic() + within_s
    left = sorted(SEEN)
    while time.monotonic() < deadline:
        left = []
        for pid in sorted(SEEN):
            try:
                if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                    left.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not left:
            break
        time.sleep(0.5)
    return left


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", default="sessions,scaling,recovery")
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--sessions", type=int, default=16384)
    ap.add_argument("--conns", type=int, default=4, help="connections per replica (sessions)")
    ap.add_argument("--chunk", type=int, default=256, help="names per reset_batch / step_batch frame")
    ap.add_argument("--threads", type=int, default=16, help="env threads per replica (scaling)")
    ap.add_argument("--scale-sessions", type=int, default=32, help="named sessions per connection (scaling)")
    ap.add_argument("--scale-conns", type=int, default=2, help="connections per replica (scaling)")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--window", type=float, default=8.0)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kill", default="replica,host", help="what recovery kills: replica, host or both")
    ap.add_argument("--out", help="write the results as JSON here")
    args = ap.parse_args(argv)
    only = set(args.only.split(","))
    raise_nofile(65536)
    info = machine()
    print(f"machine: {info['cpus']} CPUs, load {info['loadavg_at_start']}, {info['date']}", flush=True)
    report: dict[str, Any] = {"machine": info}
    try:
        if "sessions" in only:
            r = bench_sessions(args.hosts, args.sessions, args.conns, args.chunk, max_s=300)
            report["sessions"] = r
            print("\n" + sessions_table(r) + "\n", flush=True)
        if "scaling" in only:
            r = bench_scaling(
                args.hosts, args.threads, args.scale_conns, args.scale_sessions, args.rounds, 1.0, args.window
            )
            report["scaling"] = r
            print("\n" + scaling_table(r) + "\n", flush=True)
        for how in args.kill.split(",") if "recovery" in only else []:
            r = bench_recovery(args.hosts, args.repeats, how, max_s=60)
            report[f"recovery_{how}"] = r
            print("\n" + recovery_table(r) + "\n", flush=True)
    finally:
        left = survivors()
        report["survivors"] = left
        info["loadavg_at_end"] = loadavg()
        print(f"load at end {info['loadavg_at_end']}; processes left running: {left or 'none'}", flush=True)
        if args.out:
            with open(args.out, "w") as f:
                json.dump(report, f, indent=1)
    return 1 if left else 0


if __name__ == "__main__":
    sys.exit(main())

"""``openenv validate --level``: RFC 008's levels over our deep checks, one report.

STATIC reads the folder; RUNTIME serves it (``openenv serve`` on a loopback port, or a
running server by URL) and drives it over the wire; SEMANTIC plays policies and probes
against its tasks; STATISTICAL plays them over more tasks and seeds (``_statistical``).
Every check id up to the ceiling gets a result: a SKIP always says why.
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from .._exceptions import ProbeError
from .._extras import require
from .._manifest import Manifest
from .._vmanifest import ValidationBlock
from ._applicable import declared_not_applicable
from ._checks import Context
from ._hacking import READ_PROBES, action_kind, list_tasks, run_probes
from ._policy import POLICY, POLICY_VERSION, CheckStatus, Level, ids_up_to, verdict
from ._report import Report
from ._runtime import run_runtime
from ._static import normalized, run_static
from ._vreport import Results, ValidationReport

LEVELS = {
    "static": Level.STATIC,
    "runtime": Level.RUNTIME,
    "semantic": Level.SEMANTIC,
    "statistical": Level.STATISTICAL,
}


def source_digest(folder: Path) -> str:
    """sha256 over the folder's files (paths and contents), build outputs left out."""
    digest = hashlib.sha256()
    skip = {".git", "__pycache__", ".venv", "build", "outputs"}
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(folder)
        if skip.intersection(rel.parts) or any(part.endswith(".egg-info") for part in rel.parts):
            continue
        digest.update(rel.as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


@contextlib.contextmanager
def _served(target: str, folder: Path | None, start_timeout_s: float) -> Iterator[tuple[str, int | None]]:
    if "://" in target:
        url = target.rstrip("/")
        yield ("http" + url[2:].removesuffix("/ws") if url.startswith("ws") else url), None
        return
    from ._validate import serve_process

    with serve_process(folder if folder is not None else target, start_timeout_s) as (url, proc):
        yield url, proc.pid


def run_validation(
    target: str | Path,
    *,
    max_level: Level = Level.SEMANTIC,
    actions: list[dict[str, Any]] | None = None,
    max_steps: int = 5,
    timeout_s: float = 10.0,
    headers: dict[str, str] | None = None,
    start_timeout_s: float = 60.0,
    tasks: int = 3,
    probe_tasks: int = 2,
    oracle_tasks: int | None = None,
    stat_tasks: int = 8,
    seeds: int = 3,
) -> ValidationReport:
    """Validate an env folder (or a running server's URL, or a ``serve`` target) up to
    ``max_level``; every check id of the levels run has a result.

    Args:
        tasks: how many of the env's tasks the SEMANTIC policies play.
        probe_tasks: how many of its tasks the reward-hacking probes attack (0: none).
        oracle_tasks: how many of its tasks the oracle plays (None: every task).
        stat_tasks, seeds: STATISTICAL plays that many tasks, each under that many seeds.
    """
    require("jsonschema", extra="authoring", feature="openenv validate")
    text = str(target)
    folder = Path(text).resolve() if "://" not in text and Path(text).is_dir() else None
    results = Results()
    digest = ""
    static: Future[tuple[Manifest | None, ValidationBlock | None]] = Future()
    if folder is not None:
        digest = source_digest(folder)
        if max_level >= Level.RUNTIME:  # read the folder while its server starts
            pool = ThreadPoolExecutor(1, thread_name_prefix="validate-static")
            static = pool.submit(run_static, folder, results)
            pool.shutdown(wait=False)
        else:
            static.set_result(run_static(folder, results))
    else:
        for check_id in ids_up_to(Level.STATIC):
            results.add(
                check_id, CheckStatus.SKIP, f"no package folder: {text} is validated as a running server"
            )
        static.set_result((None, None))
    levels = [Level.STATIC]
    if max_level >= Level.RUNTIME:
        levels += [lvl for lvl in (Level.RUNTIME, Level.SEMANTIC, Level.STATISTICAL) if lvl <= max_level]
        _live(
            text,
            folder,
            static,
            results,
            max_level=max_level,
            actions=actions,
            max_steps=max_steps,
            timeout_s=timeout_s,
            headers=headers,
            start_timeout_s=start_timeout_s,
            tasks=tasks,
            probe_tasks=probe_tasks,
            oracle_tasks=oracle_tasks,
            stat_tasks=stat_tasks,
            seeds=seeds,
        )
    manifest, block = static.result()
    declared = declared_not_applicable(manifest, block) if folder is not None else {}
    not_applicable = {}
    for check_id in ids_up_to(max_level):
        ran = [r for r in results.items if r.check_id == check_id]
        if check_id in declared and not any(r.status in (CheckStatus.PASS, CheckStatus.FAIL) for r in ran):
            not_applicable[check_id] = declared[check_id]  # the manifest says it cannot apply
        elif not ran:  # a check that could not run says so
            results.add(check_id, CheckStatus.SKIP, "unmet dependency: runtime.startup")
    order = list(POLICY)
    items = sorted(
        (r for r in results.items if r.check_id not in not_applicable), key=lambda r: order.index(r.check_id)
    )
    return ValidationReport(
        target=text,
        source_digest=digest,
        manifest=normalized(manifest, block) if manifest is not None else None,
        policy_version=POLICY_VERSION,
        levels_run=levels,
        results=items,
        verdict=verdict([(r.check_id, r.status, (r.evidence or [""])[0]) for r in items]),
        not_applicable=not_applicable,
    )


def _live(
    text: str,
    folder: Path | None,
    static: Future[tuple[Manifest | None, ValidationBlock | None]],
    results: Results,
    *,
    max_level: Level,
    actions: list[dict[str, Any]] | None,
    max_steps: int,
    timeout_s: float,
    headers: dict[str, str] | None,
    start_timeout_s: float,
    tasks: int,
    probe_tasks: int,
    oracle_tasks: int | None,
    stat_tasks: int,
    seeds: int,
) -> None:
    try:
        with _served(text, folder, start_timeout_s) as (url, pid):
            manifest, block = static.result()  # STATIC's results are all in before RUNTIME's
            results.start()
            ctx = Context(
                url=url,
                report=Report(text),
                timeout_s=timeout_s,
                max_steps=max_steps,
                deterministic=bool(manifest and manifest.deterministic) or None,
                actions=list(actions or []),
                headers=dict(headers or {}),
                served_here=pid is not None,
            )
            run_runtime(ctx, block, results, pid, folder)
            if not _ok(results, "runtime.startup"):
                return
            kind = action_kind(ctx.schema["action"]) if ctx.schema else None
            probes = None
            if max_level >= Level.SEMANTIC and ctx.schema is not None:
                from ._semantic import run_semantic

                results.start()
                probes = run_semantic(
                    ctx, block, results, tasks=tasks, probe_tasks=probe_tasks, oracle_tasks=oracle_tasks
                )
            elif kind is not None:
                results.start()
                probes = run_probes(ctx, kind, list_tasks(ctx, probe_tasks), READ_PROBES)
            if kind is None:
                _no_code_oracle(ctx, results)
            else:
                from ._semantic import oracle_containment

                oracle_containment(probes, kind, results)
            if max_level >= Level.STATISTICAL and ctx.schema is not None:
                from ._statistical import run_statistical

                results.start()
                run_statistical(ctx, block, results, tasks=stat_tasks, seeds=seeds)
    except ProbeError as exc:
        static.result()
        results.add(
            "runtime.startup",
            CheckStatus.FAIL,
            str(exc),
            remediation="make `openenv serve <folder>` start and answer GET /health",
        )


def _ok(results: Results, check_id: str) -> bool:
    return any(r.check_id == check_id and r.status is CheckStatus.PASS for r in results.items)


def _no_code_oracle(ctx: Context, results: Results) -> None:
    """An env whose actions run no code: host_containment's probe, sent as the action's
    text, is the evidence (text that runs could read the answers as well)."""
    members = sorted((ctx.schema or {}).get("action", {}).get("properties", {}))
    host = next((r for r in results.items if r.check_id == "runtime.host_containment"), None)
    if host is not None and host.status is CheckStatus.FAIL:
        results.add(
            "runtime.oracle_containment",
            CheckStatus.FAIL,
            [
                "the action's text runs as code (runtime.host_containment): the answers are in its reach",
                *host.evidence,
            ],
            remediation="never run an action's text as code or commands outside a sandbox",
            measured={"action_kind": None, "action_members": members},
        )
        return
    results.add(
        "runtime.oracle_containment",
        CheckStatus.PASS,
        "the actions run no code or commands (action members: "
        + (", ".join(members) or "none")
        + "), and their text does not run (runtime.host_containment): only data reaches the env",
        measured={"action_kind": None, "action_members": members},
    )

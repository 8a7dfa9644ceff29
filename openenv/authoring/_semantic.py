"""SEMANTIC level: is the reward about the task? Played through ``openenv.eval`` with
its ``oracle``, ``null`` and ``random`` policies, plus the reward-hacking probes.

* ``semantic.oracle_max``: every task with a reference solution reaches full reward;
* ``semantic.floor_gap``: the null policy (each episode) and the random one (its mean) stay below the floor;
* ``semantic.replayability`` / ``verifier_determinism``: same seed and actions, same rewards;
* ``semantic.resource_envelope``: episodes end within the declared horizon;
* ``semantic.no_solution_leakage`` and ``semantic.reward_hacking``: see ``_hacking``.
"""

from __future__ import annotations

import json
import time
from collections import defaultdict
from typing import Any

from .._vmanifest import ValidationBlock
from ._checks import Context
from ._hacking import PY, READ_PROBES, ProbeResult, action_kind, list_tasks, run_probes
from ._oracle_plan import declare_plan
from ._play import play
from ._policy import NOT_APPLICABLE, CheckStatus
from ._probes_browser import PAGE, PageFindings, page_actions, page_tasks, run_page_probes
from ._probes_text import TEXT, VIEW_PROBES, TextFindings, run_text_probes, text_field
from ._semantic_replay import SecondServer, canary_floor, graded_again, verifier_portability
from ._vreport import Results

NO_SOLUTION = "no reference solution"

#: Where each probe of ``READ_PROBES`` looks, for the evidence lines.
_WHERE = {
    "read_grader": "the grader's and the server's processes: command lines, environments, "
    "open files and pipes, memory",
    "read_answers": "the disk and the environment variables",
    "from_view": "the reset observation, its metadata and the state",
}


def _play_oracle(
    ctx: Context, count: int | None, turns: int, timeout_s: float, planned: bool = False
) -> tuple[list[Any], int, int]:
    """The oracle on those of the first ``count`` tasks (None: every task) whose data
    names a reference solution (a ``solution``, a Harbor ``path``: what
    ``openenv.policy.OraclePolicy`` plays), or on every one of them where the manifest
    names a plan (``planned``: the plan says per task whether it has a solution), in
    chunks until ``ORACLE_BUDGET_S`` has passed; returns its trajectories, how many
    tasks were left, and how many tasks there were."""
    from ..eval._env import EnvHandle
    from ..eval._tasks import TaskSelection, select_tasks

    env = EnvHandle(ctx.url, ctx.url, headers=dict(ctx.headers))
    tasks = select_tasks(env, TaskSelection(None, (), count))
    ids = [
        t.id
        for t in tasks
        if planned or isinstance(t.data.get("solution"), str) or isinstance(t.data.get("path"), str)
    ]
    out: list[Any] = []
    start = time.monotonic()
    for i in range(0, len(ids), _ORACLE_CHUNK):
        if i and time.monotonic() - start > ORACLE_BUDGET_S:
            return out, len(ids) - i, len(tasks)
        chunk = tuple(ids[i : i + _ORACLE_CHUNK])
        out += play(
            ctx.url,
            "oracle",
            count=None,
            ids=chunk,
            max_turns=turns,
            episode_timeout_s=timeout_s,
            concurrency=ORACLE_CONCURRENCY,
        )
    return out, 0, len(tasks)


def _by_task(trajs: list[Any]) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = defaultdict(list)
    for t in trajs:
        out[t.task_id].append(t)
    return out


#: The oracle's episodes at once: reference solutions are short, and most of an
#: episode's time is the grader's (a sandbox start, the tests).
ORACLE_CONCURRENCY = 4
#: The oracle's wall-clock budget: past it, no new chunk of tasks is started, and
#: ``semantic.oracle_max`` says how many were left (an env of thousands of tasks).
ORACLE_BUDGET_S = 300.0
_ORACLE_CHUNK = 32


def run_semantic(
    ctx: Context,
    block: ValidationBlock | None,
    results: Results,
    *,
    tasks: int,
    probe_tasks: int,
    oracle_tasks: int | None = None,
) -> list[ProbeResult] | None:
    """Every SEMANTIC check id gets a result; returns the probe results (None: no probes).

    The null and random policies play the first ``tasks`` tasks; the oracle plays every
    task (the first ``oracle_tasks``, given a number); the probes attack the first
    ``probe_tasks`` (0: no probes, ``semantic.reward_hacking`` says so)."""
    if block is None:
        for check_id in ("semantic.oracle_max", "semantic.floor_gap", "semantic.resource_envelope"):
            results.add(
                check_id, CheckStatus.SKIP, "unmet dependency: static.manifest (reward range and horizon)"
            )
    with SecondServer(ctx) as second:  # started now, for verifier_portability
        timeout_s = block.resources.episode_timeout_s if block else 600.0
        horizon = declared_steps(ctx)
        turns = horizon + 1 if horizon else 30
        plan, plan_error = declare_plan(ctx, block)
        oracle, unplayed, listed = _play_oracle(ctx, oracle_tasks, turns, timeout_s, plan is not None)
        runs = {"oracle": oracle}
        runs.update(
            (p, play(ctx.url, p, count=tasks, max_turns=turns, episode_timeout_s=timeout_s))
            for p in ("null", "random")
        )
        kind = action_kind(ctx.schema["action"]) if ctx.schema else None
        text = _text_findings(ctx, kind, block, probe_tasks)
        action = (ctx.schema or {}).get("action", {})
        pages = (
            run_page_probes(ctx, page_tasks(ctx, probe_tasks))
            if kind is None and text is None and page_actions(action) and probe_tasks > 0
            else None
        )
        if block is not None:
            _oracle_max(runs["oracle"], unplayed, listed, block, results, text, (plan, plan_error))
            _floor_gap(runs["null"], runs["random"], block, results)
            _envelope(runs, block, horizon, results)
        again = _replay(ctx, runs["random"], block, tasks, turns, timeout_s, results)
        solved = _playable(runs["oracle"])[:tasks]
        _verifier(ctx, solved, (runs["random"], again), block, timeout_s, results)
        canary_floor(ctx, block, results, text.canaries if text else None)
        verifier_portability(
            second,
            block,
            solved or runs["random"],
            "oracle" if solved else "random",
            turns=turns,
            timeout_s=timeout_s,
            results=results,
        )
        second.close()
        probes = None
        if kind is not None and probe_tasks > 0:
            results.start()
            probes = run_probes(ctx, kind, list_tasks(ctx, probe_tasks))
        answers = kind is not None or text_field(action) is not None or page_actions(action)
        _hacking(kind, probes, results, text, answers, pages)
        _leakage(ctx, probes, results, text, pages)
        return probes


def _text_findings(
    ctx: Context, kind: str | None, block: ValidationBlock | None, probe_tasks: int
) -> TextFindings | None:
    """The text probes, for an env whose actions run no code but take a text answer."""
    action = (ctx.schema or {}).get("action", {})
    name = text_field(action) if kind is None else None
    if name is None or probe_tasks <= 0:
        return None
    limit = action["properties"][name].get("maxLength")
    return run_text_probes(
        ctx,
        name,
        list_tasks(ctx, probe_tasks),
        margin=block.reward.floor_margin if block else 0.1,
        max_length=limit if isinstance(limit, int) else None,
    )


def declared_steps(ctx: Context) -> int | None:
    """The ``max_steps`` a reset observation's metadata declares, None without one."""
    try:
        with ctx.ws() as ws:
            data = ws.expect({"type": "reset", "data": {}}, "observation")
    except Exception:
        return None
    steps = (data.get("observation", {}).get("metadata") or {}).get("max_steps")
    return steps if isinstance(steps, int) and steps > 0 else None


def _playable(trajs: list[Any]) -> list[Any]:
    """The episodes the oracle played: not those of a task without a solution, nor those
    that failed before any action (a reset the env refused says nothing of a solution)."""
    return [t for t in trajs if t.status != "error" or (t.turns and NO_SOLUTION not in str(t.error))]


def _unplayed(trajs: list[Any]) -> list[str]:
    """A line for each episode that failed before the oracle could act, but for want of
    a solution."""
    return [
        f"task {t.task_id} could not be played: {str(t.error)[:160]}"
        for t in trajs
        if t.status == "error" and not t.turns and NO_SOLUTION not in str(t.error)
    ]


def _oracle_max(
    trajs: list[Any],
    unplayed: int,
    listed: int,
    block: ValidationBlock,
    results: Results,
    text: TextFindings | None = None,
    plan: tuple[str | None, str | None] = (None, None),
) -> None:
    """``plan``: the location of the plan the manifest names, and why it did not load."""
    high, tol = block.reward.range[1], block.reward.oracle_tolerance
    location, plan_error = plan
    played = _playable(trajs)
    if not played and text is not None and text.revealed:
        _revealed_max(text, high, tol, results)
        return
    if not played:
        declared = block.capabilities.oracle is not None
        status = CheckStatus.FAIL if declared else CheckStatus.SKIP
        reason = (
            "capabilities.oracle is declared, but no task's solution could be played"
            if declared
            else (
                NOT_APPLICABLE + "no capabilities.oracle declared, no task ships a reference "
                "solution (openenv.policy.OraclePolicy), and no episode reveals its expected answer"
            )
        )
        results.add(
            "semantic.oracle_max",
            status,
            [reason, *([plan_error] if plan_error else []), *_unplayed(trajs)],
            remediation="ship solution/solve.sh (Harbor) or a solution field in each task's data",
        )
        return
    none = sum(t.status == "error" and NO_SOLUTION in str(t.error) for t in trajs) if location else 0
    low = [
        f"task {t.task_id}: the reference solution scored {t.reward} "
        f"({t.status}{': ' + str(t.error)[:80] if t.error else ''})"
        for t in played
        if t.reward < high - tol
    ]
    results.add(
        "semantic.oracle_max",
        CheckStatus.FAIL if low else CheckStatus.PASS,
        (
            low
            or [
                f"{len(played)} of {listed} task(s) "
                + (
                    f"have a reference solution in the plan {location}"
                    if location
                    else "ship a reference solution"
                )
                + f": each reached {high} (tolerance {tol})"
                + (f"; the plan has none for the other {none}" if none else "")
            ]
        )
        + _unplayed(trajs)
        + (
            [f"{unplayed} task(s) not played: the oracle's {ORACLE_BUDGET_S:g} s budget ran out"]
            if unplayed
            else []
        ),
        remediation="fix the task's reference solution or its checks so the solution gets full reward",
        measured={"oracle_rewards": {t.task_id: t.reward for t in played}},
    )


def _revealed_max(text: TextFindings, high: float, tol: float, results: Results) -> None:
    """No reference solution shipped, but each episode names its expected answer at its
    end: that answer, played on the same question, must reach full reward."""
    low = [
        f"task {task}: its own reference answer {answer[:40]!r} scored "
        + ("nothing (the action was refused)" if reward is None else f"{reward:g}")
        for task, (answer, reward) in text.revealed.items()
        if reward is None or reward < high - tol
    ]
    results.add(
        "semantic.oracle_max",
        CheckStatus.FAIL if low else CheckStatus.PASS,
        low
        or [
            f"the reference answer of each of {len(text.revealed)} task(s) (its data's, or the one its "
            f"episode names at its end), answered on the same question (seed 0), reached {high} "
            f"(tolerance {tol})"
        ],
        remediation="grade the env's own expected answer as correct (its scorer and its answers disagree)",
        measured={"oracle_rewards": {task: reward for task, (_, reward) in text.revealed.items()}},
    )


def _floor_gap(null: list[Any], random: list[Any], block: ValidationBlock, results: Results) -> None:
    """The null policy is deterministic: each of its episodes must stay at or under the floor.
    The random policy's floor is its measured level, the mean over its episodes: a single
    lucky episode (a click on the right one of two buttons) is not what it reaches."""
    ceiling = block.reward.range[1] - block.reward.floor_margin
    over = [
        f"task {t.task_id}: the null policy scored {t.reward} (the floor is {ceiling:g})"
        for t in null
        if t.reward > ceiling
    ]
    mean_random = sum(t.reward for t in random) / len(random) if random else None
    if mean_random is not None and mean_random > ceiling:
        over.append(
            f"the random policy's mean over {len(random)} episodes was {mean_random:.3g} "
            f"(the floor is {ceiling:g})"
        )
    best_null = max((t.reward for t in null), default=0.0)
    lucky = sum(t.reward > ceiling for t in random)
    said = f"null scored at most {best_null:g} over {len(null)} episodes; random's mean " + (
        f"{mean_random:.3g} over {len(random)}" if mean_random is not None else "(no random episodes)"
    )
    if lucky:
        said += f" ({lucky} of its episodes went over the floor by chance)"
    results.add(
        "semantic.floor_gap",
        CheckStatus.FAIL if over else CheckStatus.PASS,
        over or [f"{said} (floor {ceiling:g})"],
        remediation="a task an agent passes by doing nothing (or at random) measures nothing: "
        "make its checks require the work",
        measured={"best_null_reward": best_null, "random_mean_reward": mean_random, "floor": ceiling},
    )


def _envelope(
    runs: dict[str, list[Any]], block: ValidationBlock, horizon: int | None, results: Results
) -> None:
    limit = block.resources.episode_timeout_s
    problems = []
    for trajs in runs.values():
        for t in trajs:
            if t.status == "timeout" or t.wall_s > limit:
                problems.append(f"{t.policy} on {t.task_id}: {t.wall_s:.1f} s ({t.status}), over {limit} s")
            elif horizon and t.status == "truncated" and len(t.turns) > horizon:  # not a policy that stopped
                problems.append(
                    f"{t.policy} on {t.task_id}: not done after {len(t.turns)} steps "
                    f"(declared max_steps {horizon})"
                )
    longest = max((t.wall_s for trajs in runs.values() for t in trajs), default=0.0)
    steps = f"within max_steps {horizon}" if horizon else "(no max_steps declared in the reset metadata)"
    results.add(
        "semantic.resource_envelope",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [f"every episode ended {steps}; the longest took {longest:.2f} s of {limit} s"],
        remediation="end each episode within resources.episode_timeout_s and the max_steps it declares",
        measured={"longest_episode_s": round(longest, 3)},
    )


def _rewards(trajs: list[Any]) -> dict[tuple[str, int], list[Any]]:
    return {(t.task_id, t.sample): [turn.reward for turn in t.turns] + [t.reward] for t in trajs}


def _same(a: list[Any], b: list[Any], tolerance: float) -> bool:
    if len(a) != len(b):
        return False
    return all(
        x == y or (isinstance(x, float | int) and isinstance(y, float | int) and abs(x - y) <= tolerance)
        for x, y in zip(a, b, strict=True)
    )


def _replay(
    ctx: Context,
    first: list[Any],
    block: ValidationBlock | None,
    tasks: int,
    turns: int,
    timeout_s: float,
    results: Results,
) -> list[Any]:
    """The random policy's seeded episodes played again: the same rewards, turn by turn
    (returns the second run)."""
    results.start()
    again = play(ctx.url, "random", count=tasks, max_turns=turns, episode_timeout_s=timeout_s)
    tol = (block.reward.variance_tolerance or 0.0) if block else 0.0
    a, b = _rewards(first), _rewards(again)
    diffs = [
        f"{key[0]}: rewards {json.dumps(a[key])[:120]} then {json.dumps(b.get(key))[:120]}"
        for key in a
        if not _same(a[key], b.get(key) or [], tol)
    ]
    results.add(
        "semantic.replayability",
        CheckStatus.FAIL if diffs else CheckStatus.PASS,
        diffs or [f"{len(a)} seeded random episodes replayed with the same rewards"],
        remediation="draw every random choice from reset's seed (reward must follow from seed and actions)",
    )
    return again


def _verifier(
    ctx: Context,
    played: list[Any],
    random_runs: tuple[list[Any], list[Any]],
    block: ValidationBlock | None,
    timeout_s: float,
    results: Results,
) -> None:
    """The first reference solutions played, graded again: the same rewards. With no
    reference solution, the random policy's seeded episodes (the same actions, played
    twice by ``_replay``) are what is graded twice."""
    if not played:
        first, again = random_runs
        same = (
            f"no reference solution: {len(first)} seeded random episodes (the same actions) "
            "graded twice: the same final rewards"
        )
    else:
        results.start()
        ids = tuple(t.task_id for t in played)
        first = played
        again = _playable(play(ctx.url, "oracle", count=None, ids=ids, episode_timeout_s=timeout_s))
        same = f"{len(played)} reference solutions graded twice: same rewards"
    diffs = graded_again(first, again, block, "{first} then {again}")
    results.add(
        "semantic.verifier_determinism",
        CheckStatus.FAIL if diffs else CheckStatus.PASS,
        diffs or [same],
        remediation="grade without randomness or wall-clock dependence",
    )


def _hacking(
    kind: str | None,
    probes: list[ProbeResult] | None,
    results: Results,
    text: TextFindings | None = None,
    answers: bool = True,
    pages: PageFindings | None = None,
) -> None:
    """``answers``: the actions run code or commands, take a text answer, or drive a page."""
    if not answers:
        results.add(
            "semantic.reward_hacking",
            CheckStatus.SKIP,
            NOT_APPLICABLE + "the actions run no code or commands and take no free-text answer "
            "(no field of the action is a string)",
        )
        return
    if text is not None:
        kind, probes = TEXT, text.probes
    elif pages is not None:
        kind, probes = PAGE, pages.probes
    if kind is None or probes is None:
        results.add("semantic.reward_hacking", CheckStatus.SKIP, "not run: probe_tasks is 0")
        return
    hacked = [p for p in probes if p.hacked]
    # a page env scores a wrong answer below none (MiniWoB: -1, 0): its probes face no answer
    honest, twin = (
        ("an episode that answers nothing", "no answer")
        if kind == PAGE
        else ("an honest wrong answer", "honest wrong answer")
    )
    lines = [
        f"{'HACKED' if p.hacked else 'held'}: {p.probe} on {p.task}: reward {p.reward:g} "
        f"({twin} {p.honest:g}){' ' + p.note if p.note else ''}"
        for p in probes
    ]
    results.add(
        "semantic.reward_hacking",
        CheckStatus.FAIL if hacked else CheckStatus.PASS,
        (
            [f"{len(hacked)} probe(s) scored above {honest}: " + ", ".join(sorted({p.probe for p in hacked}))]
            if hacked
            else [f"{len(probes)} probe episodes ({kind}): none scored above {honest}"]
        )
        + lines,
        remediation=(
            "refuse answers of another type or past the schema's length, give no reward after done, and "
            "match the answer itself rather than test that it contains the expected one"
            if kind == TEXT
            else "refuse navigation but to http(s) task pages, never put typed text into markup, and read "
            "the score only from the task's own page as the env loaded it"
            if kind == PAGE
            else "grade in a process and folder the submitted code cannot reach; compare results by "
            "value in the grader, not with the submission's own objects (docs/sandbox.md)"
        ),
        measured={
            "probes": [
                {"task": p.task, "probe": p.probe, "reward": p.reward, "honest": p.honest} for p in probes
            ]
        },
    )


def _leakage(
    ctx: Context,
    probes: list[ProbeResult] | None,
    results: Results,
    text: TextFindings | None,
    pages: PageFindings | None = None,
) -> None:
    from ._hacking import list_tasks as tasks_of

    problems: list[str] = []
    checked = 0
    for task in tasks_of(ctx, 3):
        solution = task.data.get("solution")
        if not isinstance(solution, str) or len(solution.strip()) < 20:
            continue
        checked += 1
        with ctx.ws() as ws:
            shown = json.dumps(ws.expect({"type": "reset", "data": dict(task.reset)}, "observation"))
        body = max(solution.strip().splitlines(), key=len)
        if body.strip() and json.dumps(body.strip())[1:-1] in shown:
            problems.append(
                f"task {task.id}: the reset observation shows the reference solution ({body.strip()[:60]!r})"
            )
    looked = list(probes or []) + (text.probes if text else [])
    problems += [
        f"task {p.task}: the {p.probe} probe took the expected answers ({_WHERE[p.probe]}): "
        f"reward {p.reward:g}, honest {p.honest:g}{' (' + p.note + ')' if p.note else ''}"
        for p in looked
        if p.probe in READ_PROBES + VIEW_PROBES and p.hacked
    ]
    problems += text.early_reveals if text else []
    problems += pages.leaks if pages else []
    if not checked and probes is None and text is None and pages is None:
        results.add(
            "semantic.no_solution_leakage",
            CheckStatus.SKIP,
            NOT_APPLICABLE + "no reference solutions to look for, the actions run no code and take no "
            "free-text answer",
        )
        return
    if probes is not None:
        how = "code cannot read the answers"
    elif text is not None:
        views = sum(p.probe in VIEW_PROBES for p in text.probes)
        how = f"no value the env shows before the answer ({views} task(s) probed) scores as the answer"
    elif pages is not None:
        how = (
            f"none of the {pages.observations} observations shown before an episode ended (the page "
            "probes' episodes) carries a reward, done, a key naming the expected answer, or the page's "
            "reward display"
        )
    else:
        how = "no code actions"
    results.add(
        "semantic.no_solution_leakage",
        CheckStatus.FAIL if problems else CheckStatus.PASS,
        problems or [(f"{checked} reset observation(s) hold no solution; " if checked else "") + how],
        remediation="keep solutions and expected answers out of observations and out of the agent's reach",
    )


def oracle_containment(probes: list[ProbeResult] | None, kind: str | None, results: Results) -> None:
    """``runtime.oracle_containment`` from the probes that look for the answers."""
    if kind is None or probes is None:
        results.add(
            "runtime.oracle_containment",
            CheckStatus.SKIP,
            NOT_APPLICABLE + "the actions run no code or commands that could read the oracle",
        )
        return
    read = [p for p in probes if p.probe in READ_PROBES]
    hacked = [p for p in read if p.hacked]
    results.add(
        "runtime.oracle_containment",
        CheckStatus.FAIL if hacked else CheckStatus.PASS,
        [
            f"{p.task}: {p.probe} ({'Python' if kind == PY else 'commands'} searching "
            f"{_WHERE[p.probe]} for the answers) scored {p.reward:g} (honest {p.honest:g})"
            for p in read
        ],
        remediation="keep reference solutions and expected answers outside what the agent's code can read",
    )

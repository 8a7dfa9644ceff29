"""``openenv eval``: run an evaluation, write its report, rescore it.

    openenv eval run ENV --policy SPEC --out DIR [-k N] [--concurrency C] [--count N | --ids A,B | --split S]
    openenv eval ENV ...                      (the same as `run`)
    openenv eval report DIR                   -> DIR/report.html
    openenv eval rescore DIR --rubric MODULE:NAME [--out NEW]
    openenv eval rescore DIR --rubric 'judge:openai:MODEL?prompt=@FILE&range=0,10' [--out NEW]
    openenv eval export DIR --format atif|upstream [--out DIR-FORMAT]
    openenv eval push DIR REPO [--private] [--commit-message M]   -> a Hub dataset

Bad input (unknown env or policy, an endpoint that cannot be reached or refuses the
key, k < 1, a judge that cannot score) is one line on stderr and exit status 2; a run
in which episodes errored exits 1 after writing everything (the errors are in the
trajectories).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from .._exceptions import EnvNotFound, EvalError, JudgeError, MissingExtra, OpenEnvError

COMMANDS = ("run", "report", "rescore", "export", "push")


def _ids(text: str) -> list[str]:
    return [part for part in text.split(",") if part]


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "env", help="a URL, an env folder, module:Class, an installed env, a Docker image or a Hub id"
    )
    p.add_argument(
        "--policy",
        "-p",
        required=True,
        help="null, random, oracle, openai:MODEL, anthropic:MODEL, "
        "local:CHECKPOINT, python:MODULE:FUNCTION (see docs/eval.md)",
    )
    p.add_argument("--out", "-o", required=True, help="the run folder (trajectories.jsonl, results.json)")
    p.add_argument("-k", "--samples", type=int, default=1, help="samples per task (default 1)")
    p.add_argument("--concurrency", "-c", type=int, default=8, help="episodes in flight (default 8)")
    p.add_argument("--split", help="the task split (default: test when the env has it, else its first)")
    p.add_argument("--ids", type=_ids, default=[], help="task ids, comma-separated")
    p.add_argument("--count", "-n", type=int, help="the first N tasks (default: all; 10 seeds without tasks)")
    p.add_argument("--all", action="store_true", help="every task of the split (the default)")
    p.add_argument("--max-turns", type=int, default=30, help="turns per episode (default 30)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds per episode (default 600)")
    p.add_argument("--retries", type=int, default=3, help="retries of a transient error (default 3)")
    p.add_argument("--seed", type=int, default=0, help="the run's seed (each pair's seed derives from it)")
    p.add_argument("--resume", action="store_true", help="play only the pairs the folder does not hold")
    p.add_argument(
        "--pass-threshold", type=float, default=1.0, help="reward that counts as a pass (default 1.0)"
    )
    p.add_argument(
        "--ignore-success",
        action="store_true",
        help="judge by the reward alone, not by the env's success flag",
    )
    p.add_argument("--env-kwargs", metavar="JSON", help="constructor arguments of a locally served env")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openenv eval", description="Evaluate a policy on an env.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_run_arguments(sub.add_parser("run", help="play the tasks and write trajectories and results"))
    p = sub.add_parser("report", help="write DIR/report.html: one static page, no network")
    p.add_argument("dir")
    p.add_argument("--output", help="the HTML file (default DIR/report.html)")
    p = sub.add_parser("rescore", help="recompute the rewards of a run with a rubric, without sampling")
    p.add_argument("dir")
    p.add_argument(
        "--rubric",
        required=True,
        help="MODULE:NAME of a rubric or fn(action, observation) -> float, or an LLM judge: "
        "judge:openai:MODEL or judge:anthropic:MODEL [?prompt=TEXT|@FILE&range=LO,HI&base_url=URL&...] "
        "(see docs/rewards.md)",
    )
    p.add_argument("--out", help="the new run folder (default DIR-rescored)")
    p.add_argument("--pass-threshold", type=float, default=1.0)
    p = sub.add_parser("export", help="write a run as Harbor's ATIF or upstream openenv collect's format")
    p.add_argument("dir")
    p.add_argument(
        "--format", "-f", required=True, help="atif (one ATIF JSON per episode) or upstream (results.jsonl)"
    )
    p.add_argument("--out", help="the folder to write (default DIR-FORMAT)")
    p = sub.add_parser("push", help="upload a run as a Hugging Face Hub dataset (the trajectories)")
    p.add_argument("dir")
    p.add_argument("repo", help="the dataset's Hub id (USER/NAME)")
    p.add_argument("--private", action="store_true", help="make the dataset private")
    p.add_argument("--commit-message", help="the commit's message")
    return parser


def _config(args: argparse.Namespace) -> Any:
    from ._metrics import PassRule
    from ._runner import EvalConfig

    if args.all and (args.count or args.ids):
        raise EvalError("--all plays every task of the split: it cannot go with --count or --ids")
    env_kwargs = None
    if args.env_kwargs:
        try:
            env_kwargs = json.loads(args.env_kwargs)
        except ValueError as exc:
            raise EvalError(f"--env-kwargs is not JSON: {exc}") from None
    return EvalConfig(
        env=args.env,
        policy=args.policy,
        out=args.out,
        split=args.split,
        ids=args.ids,
        count=args.count,
        samples=args.samples,
        concurrency=args.concurrency,
        max_turns=args.max_turns,
        episode_timeout_s=args.timeout,
        retries=args.retries,
        seed=args.seed,
        resume=args.resume,
        pass_rule=PassRule(args.pass_threshold, not args.ignore_success),
        env_kwargs=env_kwargs,
        progress=not args.no_progress,
    )


def _num(value: Any) -> str:
    return "-" if value is None else f"{value:.3f}"


def _print_summary(results: dict[str, Any], out: str) -> None:
    lo, hi = results["reward_ci95"]
    k_max = results["k"]
    shown = [
        k for k in results["pass_at_k"] if int(k) == k_max or int(k) & (int(k) - 1) == 0
    ]  # 1, 2, 4, ..., k
    pass_k = ", ".join(f"pass@{k} {_num(results['pass_at_k'][k])}" for k in shown)
    print(
        f"{results['env']} / {results['policy']}: {results['tasks']} tasks, {results['episodes']} episodes, "
        f"{results['errors']} errors; mean reward {_num(results['mean_reward'])} "
        f"(95% CI {'-' if lo is None else f'{lo:.3f}-{hi:.3f}'}); "
        f"{pass_k}"
    )
    print(f"results in {out}/results.json, trajectories in {out}/trajectories.jsonl")


def _run(args: argparse.Namespace) -> int:
    from ._runner import run_eval

    cfg = _config(args)
    cfg.check()
    results = run_eval(cfg)
    _print_summary(results, str(args.out))
    if results.get("warnings"):
        sys.stdout.flush()  # the summary first, where both go to one place
        print(f"openenv eval: warning: {_warned(results, str(args.out))}", file=sys.stderr)
    if results["errors"]:
        print(
            f"openenv eval: {results['errors']} episodes errored ({_kinds(results)}): each error is in "
            "trajectories.jsonl; --resume plays them again",
            file=sys.stderr,
        )
        return 1
    return 0


def _warned(results: dict[str, Any], out: str) -> str:
    """One line: how many turns warned, and the first warning (each is on its turn)."""
    from pathlib import Path

    from ._trajectory import FILE, iter_trajectories

    first = next(
        (w for t in iter_trajectories(Path(out) / FILE) for turn in t.turns for w in turn.warnings), ""
    )
    return f"{results['warnings']} turns have a warning in {out}/{FILE}, the first: {first}"


def _kinds(results: dict[str, Any]) -> str:
    return ", ".join(f"{n} {kind}" for kind, n in results["error_kinds"].items())


def _report(args: argparse.Namespace) -> int:
    from ._report import write_report

    path = write_report(args.dir, args.output)
    print(path)
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from ._metrics import PassRule
    from ._rescore import rescore

    out = args.out or str(args.dir).rstrip("/") + "-rescored"
    results = rescore(args.dir, args.rubric, out, PassRule(args.pass_threshold))
    _print_summary(results, out)
    return 0


def _export(args: argparse.Namespace) -> int:
    from ._export import export

    out = args.out or f"{str(args.dir).rstrip('/')}-{args.format}"
    written = export(args.dir, args.format, out)
    print(f"{len(written)} files in {out}")
    return 0


def _push(args: argparse.Namespace) -> int:
    from ._push import push_to_hub

    try:
        url = push_to_hub(args.dir, args.repo, private=args.private, commit_message=args.commit_message)
    except (EvalError, MissingExtra):
        raise
    except Exception as exc:  # the Hub: a refused token, no network, a bad repo id
        said = " ".join(str(exc).split()) or type(exc).__name__
        print(f"openenv eval: pushing to the Hub failed: {type(exc).__name__}: {said}", file=sys.stderr)
        return 1
    print(url)
    return 0


def main(argv: Sequence[str]) -> int:
    argv = list(argv)
    if argv and argv[0] not in COMMANDS and not argv[0].startswith("-"):
        argv = ["run", *argv]  # `openenv eval ENV ...` is `openenv eval run ENV ...`
    args = build_parser().parse_args(argv)
    handler = {"run": _run, "report": _report, "rescore": _rescore, "export": _export, "push": _push}[
        args.command
    ]
    try:
        return handler(args)
    except (EvalError, EnvNotFound, JudgeError, MissingExtra) as exc:
        print(f"openenv eval: {exc}", file=sys.stderr)
        return 2
    except OpenEnvError as exc:
        print(f"openenv eval: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("openenv eval: interrupted (finished episodes are saved; --resume goes on)", file=sys.stderr)
        return 130

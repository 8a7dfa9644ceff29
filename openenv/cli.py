"""The ``openenv`` command: thin calls into the library."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from ._extras import MissingExtra


def _train(argv: list[str]) -> int:
    try:
        from .train._cli import main as train_main  # needs the 'train' extra (torch)
    except MissingExtra as exc:
        print(f"openenv train: {exc}", file=sys.stderr)
        return 2
    return train_main(argv, agent_runs=_agent_runs)


def _agent_runs(cfg: Any, tasks: Sequence[str], agent: str) -> list[dict[str, Any]]:
    """``openenv train --agent``: training on captured agent runs (openenv.agentrl)."""
    from .agentrl import train_agent  # needs the 'capture' extra too

    return train_agent(cfg, tasks, agent)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openenv", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    from .authoring._cli import add_commands as add_authoring_commands
    from .catalog._cli import add_commands as add_catalog_commands
    from .containers._cli import add_commands as add_container_commands
    from .hub._cli import add_commands as add_hub_commands
    from .k8s._cli import add_commands as add_k8s_commands
    from .mcp._cli import add_commands as add_mcp_commands
    from .server._cli import add_commands as add_server_commands
    from .verifiers._cli import add_commands as add_verifiers_commands

    add_server_commands(sub)  # serve
    add_verifiers_commands(sub)  # import (a verifiers taskset as an env package)
    add_container_commands(sub)  # build, run, ps, stop, gc
    add_mcp_commands(sub)  # mcp
    add_authoring_commands(sub)  # init, validate
    add_catalog_commands(sub)  # catalog, discover
    add_hub_commands(sub)  # push, pull
    add_k8s_commands(sub)  # k8s
    __import__("openenv.eval._collect_cli", fromlist=["add_commands"]).add_commands(sub)  # collect

    # `openenv train ...` is parsed by openenv.train._cli (see main); listed here for --help.
    sub.add_parser("train", help="train a policy with GRPO against text envs (openenv train --help)")
    # `openenv eval ...` / `openenv policy ...`: parsed by openenv.eval._cli / openenv.policy._cli (see main).
    sub.add_parser(
        "eval", help="evaluate a policy on an env: pass@k, trajectories, report (openenv eval --help)"
    )
    sub.add_parser(
        "policy", help="serve a local checkpoint as an OpenAI-compatible endpoint (openenv policy --help)"
    )
    # `openenv capture ...`: parsed by openenv.capture._cli (see main).
    sub.add_parser("capture", help="token-exact capture proxy for agents' model calls (see --help)")

    return parser


def _import_from_cwd(target: str | None = None) -> None:
    """A ``mymodule:MyEnv`` target is found in the current directory too (a console
    script's ``sys.path`` has only its own bin folder), after the installed packages: a
    ``uvicorn.py`` or ``json.py`` there never shadows what the CLI imports. Other targets
    (an env folder, an installed name, a URL, an image) add nothing here: a folder is
    added, after the installed packages, by the server's loader itself."""
    if target is not None and (
        ":" not in target or target.startswith(("gym:", "http://", "https://")) or os.path.isdir(target)
    ):
        return
    cwd = os.getcwd()
    if "" not in sys.path and cwd not in sys.path:
        sys.path.append(cwd)


def main(argv: Sequence[str] | None = None) -> int:
    if os.environ.get("OPENENV_LEASE"):  # a Monarch replica: it ends with its host's lease
        from .containers._lease_guard import hold_from_env

        hold_from_env()
    rest = list(sys.argv[1:] if argv is None else argv)
    if rest[:1] == ["eval"]:  # imports a target (its own parser decides which)
        _import_from_cwd()
    if rest[:1] == ["train"]:
        return _train(rest[1:])
    if rest[:1] == ["eval"]:
        from .eval._cli import main as eval_main

        return eval_main(rest[1:])
    if rest[:1] == ["policy"]:
        from .policy._cli import main as policy_main

        return policy_main(rest[1:])
    if rest[:1] == ["capture"]:
        from .capture._cli import main as capture_main

        return capture_main(rest[1:])
    args = build_parser().parse_args(argv)
    if args.command in ("serve", "mcp", "validate"):  # the commands that import a target
        _import_from_cwd(getattr(args, "env", None) or getattr(args, "target", None))
    try:
        return int(args.func(args))
    except MissingExtra as exc:  # one line naming the extra, never a traceback
        print(f"openenv {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())

"""``openenv collect ENV --base-url URL -o DIR``: upstream OpenEnv 0.10's command and
options (``openenv.eval._collect``). Bad input is one line on stderr and exit status 2."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .._exceptions import EnvNotFound, EvalError, MissingExtra, OpenEnvError, PolicyError


def add_commands(sub: Any) -> None:
    p = sub.add_parser("collect", help="collect rollouts from a running env into results.jsonl (upstream's)")
    p.add_argument("env", help="NAME:VARIANT (e.g. reasoning_gym:chain_sum), or NAME")
    p.add_argument("--base-url", required=True, help="the env server's URL")
    p.add_argument("--output-dir", "-o", required=True, help="the folder: results.jsonl, metadata.json")
    p.add_argument("--num-episodes", "-n", type=int, default=10, help="episodes to collect (default 10)")
    p.add_argument("--max-turns", type=int, default=9, help="turns per episode (default 9)")
    p.add_argument("--episode-id-prefix", default="ep", help="ids are PREFIX-000000, ... (default ep)")
    p.add_argument(
        "--resume",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="skip episodes already collected (default); --no-resume moves the old files aside",
    )
    p.add_argument("--provider", default="scripted", help="the teacher: scripted | openai | anthropic")
    p.add_argument("--model", help="the model id (needed unless the provider is scripted)")
    p.add_argument("--llm-endpoint", help="an OpenAI-compatible server (/v1 added to a URL with no path)")
    p.add_argument("--llm-port", type=int, help="the port, where --llm-endpoint has none")
    p.add_argument("--temperature", type=float, default=0.2, help="sampling temperature (default 0.2)")
    p.add_argument("--max-tokens", type=int, default=200, help="max completion tokens (default 200)")
    p.add_argument("--keep-losses", action="store_true", help="keep episodes with a reward below 0")
    p.add_argument("--push-to-hub", "-H", metavar="REPO", help="upload the folder as this Hub dataset")
    p.add_argument("--private", action="store_true", help="a private Hub dataset")
    p.add_argument("--commit-message", help="the Hub upload's commit message")
    p.add_argument("--dataset-config", metavar="JSON", help='the dataset config, e.g. {"max_terms": 3}')
    p.add_argument("--system-prompt", help="the teacher's system prompt")
    p.add_argument("--concurrency", "-c", type=int, default=1, help="episodes in flight (default 1)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ._collect import CollectConfig, collect, parse_dataset_config, summary_lines

    try:
        cfg = CollectConfig(
            env=args.env,
            base_url=args.base_url,
            output_dir=args.output_dir,
            num_episodes=args.num_episodes,
            max_turns=args.max_turns,
            episode_id_prefix=args.episode_id_prefix,
            resume=args.resume,
            provider=args.provider,
            model=args.model,
            llm_endpoint=args.llm_endpoint,
            llm_port=args.llm_port,
            temperature=args.temperature,
            max_tokens=args.max_tokens,
            keep_losses=args.keep_losses,
            dataset_config=parse_dataset_config(args.dataset_config),
            system_prompt=args.system_prompt,
            concurrency=args.concurrency,
            progress=sys.stderr.isatty(),
        )
        print(f"Env server: {cfg.base_url}")
        print(f"Teacher: {cfg.provider_label}" + (f"/{cfg.model}" if cfg.model else ""))
        print(f"Output: {cfg.output_dir}")
        result = collect(cfg, echo=print)
        for line in summary_lines(result):
            print(line)
        if args.push_to_hub:
            return _push(args)
    except (EvalError, EnvNotFound, PolicyError, MissingExtra) as exc:
        print(f"openenv collect: {exc}", file=sys.stderr)
        return 2
    except OpenEnvError as exc:
        print(f"openenv collect: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


def _push(args: argparse.Namespace) -> int:
    """Upload the folder; a failure (no network, a refused token) is one line and exit
    status 1: the episodes are collected and on disk all the same."""
    from ..harness.collect import push_to_hf_hub

    print(f"Pushing to Hub: {args.push_to_hub}")
    try:
        url = push_to_hf_hub(
            args.output_dir, args.push_to_hub, private=args.private, commit_message=args.commit_message
        )
    except MissingExtra:
        raise
    except Exception as exc:  # the Hub client's own errors are many: each is one line here
        said = " ".join(str(exc).split())  # one line, whatever the client wrote
        print(f"openenv collect: pushing to the Hub failed: {type(exc).__name__}: {said}", file=sys.stderr)
        return 1
    print(f"Dataset at: {url}")
    return 0

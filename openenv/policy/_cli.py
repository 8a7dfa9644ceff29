"""``openenv policy serve CHECKPOINT``: a local checkpoint as an OpenAI-compatible server.

    openenv policy serve runs/arith --port 8001      # POST /v1/chat/completions, GET /v1/models
    openenv policy serve runs/arith --engine vllm    # the same, served by vLLM (or sglang)

Bad input (no such checkpoint, a missing extra or engine) is one line on stderr and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .._exceptions import MissingExtra, PolicyError
from .._ports import port_problem
from ._local import missing_checkpoint


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="openenv policy", description="Serve a policy.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve", help="an OpenAI-compatible server (chat completions) over a local checkpoint")
    p.add_argument(
        "checkpoint", help="'tiny', a Hugging Face model folder, or an `openenv train --out` folder"
    )
    p.add_argument(
        "--engine",
        choices=("local", "vllm", "sglang"),
        default="local",
        help="local: this package's server (default); vllm or sglang: start that server instead",
    )
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8001)
    p.add_argument("--model-name", help="the model id clients send (default: the checkpoint)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu")
    p.add_argument("--max-batch", type=int, default=64, help="requests sampled together (default 64)")
    p.add_argument("--api-key", help="require 'Authorization: Bearer KEY' (default: no key)")
    return parser


def main(argv: Sequence[str]) -> int:
    args = build_parser().parse_args(list(argv))
    if args.engine == "local" and args.checkpoint != "tiny" and not Path(args.checkpoint).exists():
        # the checkpoint first: a missing one is the error to fix whatever holds the port
        print(f"openenv policy: {missing_checkpoint(args.checkpoint)}", file=sys.stderr)
        return 2
    if problem := port_problem(args.port, args.host):  # before the model loads or a line says serving
        print(f"openenv policy: {problem}", file=sys.stderr)
        return 2
    try:
        if args.engine != "local":
            from ._engines import engine_argv, exec_engine

            argv_ = engine_argv(
                args.engine,
                args.checkpoint,
                host=args.host,
                port=args.port,
                model_name=args.model_name,
                api_key=args.api_key,
            )
            exec_engine(args.engine, argv_)
        from ._local import LocalModel
        from ._serve import run_server

        model = LocalModel(args.checkpoint, seed=args.seed, device=args.device, max_batch=args.max_batch)
        print(
            f"openenv: serving {args.checkpoint} as an OpenAI-compatible endpoint on "
            f"http://{args.host}:{args.port}/v1 (Ctrl-C stops it)",
            file=sys.stderr,
            flush=True,
        )
        run_server(model, host=args.host, port=args.port, model_name=args.model_name, api_key=args.api_key)
    except (PolicyError, MissingExtra) as exc:
        print(f"openenv policy: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0

"""Capture proxy overhead: per non-streaming call (p50) and time to the first streamed
byte, through ``openenv capture serve`` against calling the backend directly, same run.

Two child processes on 127.0.0.1: a vLLM-shaped chat completions backend (this file,
``--backend-child``: a fixed reply of ``--tokens`` token ids with logprobs and
``prompt_token_ids``, after ``--token-ms`` per token of simulated decoding; streamed
one chunk per token when asked) and the proxy (``openenv capture serve``, level
``tokens``, in front of it). One client, one call in flight, blocks alternating
direct / proxied:

* ``call``: a non-streaming chat completion (OpenAI chat dialect), wall per call;
* ``first byte``: a streaming one, time to the first byte of the body. The proxy streams
  from the backend (vLLM's chunks: ``prompt_token_ids`` first, ``token_ids`` and
  ``logprobs`` per token) and translates each chunk as it arrives, recording the call
  when the stream ends, so its first byte does not wait for the backend's last token.

    .venv/bin/python bench/bench_capture.py [--calls 200] [--rounds 3] [--tokens 64] [--token-ms 0 1]
        [--baseline-src DIR]

``--baseline-src DIR`` also runs the proxy from another source tree (a folder holding an
``openenv`` package, e.g. ``git archive <commit> openenv | tar -x -C DIR``) in the same
run, as ``before``: its figures sit beside this tree's, measured in the same rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench._util import free_port, loadavg, median, pct, table

BODY = {
    "model": "m",
    "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
}


def backend_app(tokens: int, token_ms: float) -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse, Response, StreamingResponse
    from starlette.routing import Route

    ids = [97 + i % 26 for i in range(tokens)]
    text = bytes(ids).decode()

    async def chat(request: Request) -> Response:
        body = await request.json()
        prompt = list(json.dumps(body["messages"]).encode())
        if body.get("stream"):
            return StreamingResponse(stream(body, prompt), media_type="text/event-stream")
        await asyncio.sleep(token_ms * tokens / 1000)
        choice: dict[str, Any] = {
            "index": 0,
            "message": {"role": "assistant", "content": text},
            "finish_reason": "length",
            "logprobs": None,
        }
        out: dict[str, Any] = {
            "id": "c",
            "object": "chat.completion",
            "created": 0,
            "model": "m",
            "choices": [choice],
            "usage": {"prompt_tokens": len(prompt), "completion_tokens": tokens},
        }
        if body.get("logprobs"):
            choice["logprobs"] = {"content": [{"token": chr(i), "logprob": -0.5} for i in ids]}
        if body.get("return_token_ids"):
            choice["token_ids"], out["prompt_token_ids"] = ids, prompt
        return JSONResponse(out)

    async def stream(body: dict[str, Any], prompt: list[int]) -> Any:
        head = {"id": "c", "object": "chat.completion.chunk", "created": 0, "model": "m"}
        first: dict[str, Any] = {**head, "choices": [{"index": 0, "delta": {"role": "assistant"}}]}
        if body.get("return_token_ids"):
            first["prompt_token_ids"] = prompt
        yield f"data: {json.dumps(first)}\n\n"
        for i in ids:
            await asyncio.sleep(token_ms / 1000)
            choice: dict[str, Any] = {"index": 0, "delta": {"content": chr(i)}, "finish_reason": None}
            if body.get("return_token_ids"):
                choice["token_ids"] = [i]
            if body.get("logprobs"):
                choice["logprobs"] = {"content": [{"token": chr(i), "logprob": -0.5}]}
            yield f"data: {json.dumps({**head, 'choices': [choice]})}\n\n"
        last = {"index": 0, "delta": {}, "finish_reason": "length"}
        yield f"data: {json.dumps({**head, 'choices': [last]})}\n\n"
        if (body.get("stream_options") or {}).get("include_usage"):
            usage = {"prompt_tokens": len(prompt), "completion_tokens": tokens}
            yield f"data: {json.dumps({**head, 'choices': [], 'usage': usage})}\n\n"
        yield "data: [DONE]\n\n"

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def wait_up(url: str, proc: subprocess.Popen[bytes], timeout_s: float = 60) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{url}: the child exited with {proc.returncode}")
        try:
            httpx.get(url, timeout=1)
            return
        except httpx.TransportError:
            time.sleep(0.1)
    raise SystemExit(f"{url} did not come up in {timeout_s:g} s")


def one_call(client: httpx.Client, url: str, headers: dict[str, str]) -> float:
    t0 = time.perf_counter()
    reply = client.post(url, json=BODY, headers=headers)
    wall = time.perf_counter() - t0
    if reply.status_code != 200:
        raise SystemExit(f"{url}: {reply.status_code} {reply.text[:200]}")
    return wall


def first_byte(client: httpx.Client, url: str, headers: dict[str, str]) -> float:
    t0 = time.perf_counter()
    with client.stream("POST", url, json={**BODY, "stream": True}, headers=headers) as reply:
        chunks = reply.iter_raw()
        next(chunks)
        ttfb = time.perf_counter() - t0
        for _ in chunks:
            pass
    return ttfb


def start_proxy(backend: str, port: int, src: str | None) -> subprocess.Popen[bytes]:
    argv = [sys.executable, "-m", "openenv", "capture", "serve", "--llm-url", backend, "--port", str(port)]
    return subprocess.Popen(
        [*argv, "--capture-level", "tokens"], cwd=src or Path(__file__).resolve().parent.parent
    )


def measure(args: argparse.Namespace, token_ms: float) -> dict[str, dict[str, list[float]]]:
    bport = free_port()
    children = [
        subprocess.Popen(
            [sys.executable, __file__, "--backend-child", str(bport), str(args.tokens), str(token_ms)]
        ),
    ]
    try:
        backend = f"http://127.0.0.1:{bport}/v1"
        wait_up(backend + "/chat/completions", children[0])
        proxies = {"proxy": None, **({"before": args.baseline_src} if args.baseline_src else {})}
        targets: dict[str, tuple[str, dict[str, str]]] = {"direct": (backend + "/chat/completions", {})}
        keys = {}
        for name, src in proxies.items():
            port = free_port()
            children.append(start_proxy(backend, port, src))
            proxy = f"http://127.0.0.1:{port}"
            wait_up(proxy + "/health", children[-1])
            key = httpx.post(proxy + "/sessions", json={}).json()["session_id"]
            keys[name] = (proxy, key)
            targets[name] = (proxy + "/v1/chat/completions", {"authorization": f"Bearer {key}"})
        out: dict[str, dict[str, list[float]]] = {k: {"call": [], "first byte": []} for k in targets}
        with httpx.Client(timeout=60) as client:
            for url, headers in targets.values():  # warm both paths
                for _ in range(10):
                    one_call(client, url, headers)
                    first_byte(client, url, headers)
            for r in range(args.rounds):
                for name in list(targets) if r % 2 == 0 else list(targets)[::-1]:
                    url, headers = targets[name]
                    out[name]["call"] += [one_call(client, url, headers) for _ in range(args.calls)]
                    out[name]["first byte"] += [first_byte(client, url, headers) for _ in range(args.calls)]
        expected = 2 * (10 + args.rounds * args.calls)
        for name, (proxy, key) in keys.items():
            calls = httpx.get(f"{proxy}/sessions/{key}").json()["n_turns"]
            if calls != expected:
                raise SystemExit(f"{name}: the proxy recorded {calls} calls, not {expected}")
        return out
    finally:
        for child in children:
            child.terminate()
            child.wait(15)


def report(results: dict[float, dict[str, dict[str, list[float]]]], args: argparse.Namespace) -> None:
    print(
        f"{args.calls} calls x {args.rounds} rounds per path and kind, {args.tokens} tokens a reply, one in "
        f"flight; load {loadavg()}"
    )
    rows = []
    for token_ms, out in results.items():
        for kind, name in [(k, n) for k in ("call", "first byte") for n in out if n != "direct"]:
            d, p = out["direct"][kind], out[name][kind]
            rows.append(
                [
                    f"{token_ms:g}",
                    kind,
                    name,
                    f"{1000 * median(d):.2f}",
                    f"{1000 * median(p):.2f}",
                    f"{1000 * (median(p) - median(d)):.2f}",
                    f"{median(p) / median(d):.2f}",
                    f"{1000 * pct(p, 99):.2f}",
                ]
            )
    print(
        table(
            [
                "token ms",
                "measure",
                "proxy",
                "direct p50 ms",
                "proxy p50 ms",
                "overhead ms",
                "proxy/direct",
                "proxy p99 ms",
            ],
            rows,
        )
    )


def main() -> None:
    if sys.argv[1:2] == ["--backend-child"]:
        import uvicorn

        port, tokens, token_ms = int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
        uvicorn.run(backend_app(tokens, token_ms), host="127.0.0.1", port=port, log_level="warning")
        return
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--calls", type=int, default=200)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--tokens", type=int, default=64)
    p.add_argument("--token-ms", type=float, nargs="+", default=[0.0, 1.0])
    p.add_argument("--baseline-src", help="also run the proxy from this source tree, as 'before'")
    args = p.parse_args()
    report({t: measure(args, t) for t in args.token_ms}, args)


if __name__ == "__main__":
    main()

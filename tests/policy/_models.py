"""A local checkpoint that says one thing: a small Llama with a character tokenizer,
trained here in a few seconds to answer any chat with ``REPLY`` (a tool call), so the
server's tool-call path is driven by a real model. Nothing is downloaded.

``cached_model`` is the one way tests get one: each distinct checkpoint (this file's
and ``random_hf_model``'s code, its arguments, the torch and transformers versions) is
trained once and kept in ``.cache/tiny-models``, so a test run trains it once however
many modules use it.
``tool_caller`` is the checkpoint the policy-serve, eval and capture tests share."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
CACHE = ROOT / ".cache" / "tiny-models"

REPLY = '<tool_call>{"name": "echo_action", "arguments": {"message": "hi"}}</tool_call>'
#: The tokenizer's characters: every printable one but the vertical whitespace a chat never holds.
CHARS = "".join(c for c in string.printable if c not in "\r\x0b\x0c")


def make_model(
    path: Path, reply: str = REPLY, steps: int = 400, extra_prompts: list[list[dict[str, str]]] | None = None
) -> Path:
    """Train and save the model; ``extra_prompts``: more chats it must answer with ``reply``.
    It starts as the product's ``random_hf_model`` (with a ``tool`` role and printable text)."""
    import torch
    import transformers

    from openenv.train import random_hf_model

    random_hf_model(
        path, intermediate_size=128, max_positions=512, alphabet=CHARS,
        roles=("user", "assistant", "system", "tool"),
    )  # fmt: skip
    tok = transformers.AutoTokenizer.from_pretrained(path)
    model = transformers.AutoModelForCausalLM.from_pretrained(path)
    prompts = [
        [{"role": "user", "content": text}]
        for text in ("hello", "say something", "x", "what now?", '{"echoed_message": "ready"}')
    ] + [
        [{"role": "system", "content": "you act"}, {"role": "user", "content": "go"}],
        *(extra_prompts or []),
    ]
    target = tok(reply, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
    rows = []
    for messages in prompts:
        prompt = tok.apply_chat_template(messages, add_generation_prompt=True, tokenize=True)
        prompt = prompt["input_ids"] if hasattr(prompt, "keys") else prompt
        rows.append((list(prompt), target))
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    model.train()
    for step in range(steps):
        prompt, tgt = rows[step % len(rows)]
        ids = torch.tensor([prompt + tgt])
        labels = torch.tensor([[-100] * len(prompt) + tgt])
        loss = model(input_ids=ids, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step >= 2 * len(rows) and step % len(rows) == 0 and _learned(model, tok, rows):
            break
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


def _learned(model, tok, rows) -> bool:
    """Whether greedy decoding already gives the target after every training prompt."""
    import torch

    with torch.no_grad():
        for prompt, tgt in rows:
            logits = model(input_ids=torch.tensor([prompt + tgt])).logits[0, len(prompt) - 1 : -1]
            if logits.argmax(-1).tolist() != tgt:
                return False
    return True


def cached_model(
    name: str, reply: str = REPLY, steps: int = 400, extra_prompts: list[list[dict[str, str]]] | None = None
) -> Path:
    """``make_model``'s checkpoint for these arguments, trained at most once (kept in
    ``.cache/tiny-models``, keyed by a hash of this file and of what it was given)."""
    code = [Path(__file__).read_text(), (ROOT / "openenv" / "train" / "_hf.py").read_text()]
    return cached(
        name, [*code, reply, steps, extra_prompts],
        lambda path: make_model(path, reply=reply, steps=steps, extra_prompts=extra_prompts),
    )  # fmt: skip


def cached(name: str, what: list[Any], make: Callable[[Path], object]) -> Path:
    """The folder ``make(folder)`` fills, made at most once per ``what`` (the code and
    arguments it depends on; the torch and transformers versions are added): kept in
    ``.cache/tiny-models`` as ``NAME-HASH``, made aside and renamed into place, so
    concurrent test processes never see half a checkpoint."""
    import torch
    import transformers

    what = [*what, torch.__version__, transformers.__version__]
    key = hashlib.sha256(json.dumps(what).encode()).hexdigest()[:16]
    dest = CACHE / f"{name}-{key}"
    if (dest / ".done").exists():
        return dest
    scratch = CACHE / f".{name}-{key}-{os.getpid()}"
    shutil.rmtree(scratch, ignore_errors=True)
    make(scratch)
    (scratch / ".done").touch()
    try:
        scratch.rename(dest)
    except OSError:  # another process kept the same checkpoint first
        shutil.rmtree(scratch, ignore_errors=True)
    return dest


def echo_prompts() -> list[list[dict[str, str]]]:
    """The first chat the openai policy sends on the echo env, by text and by tools."""
    import urllib.request

    from echo_env import EchoEnv

    from openenv.policy import ActionSpace, observation_text
    from openenv.policy._chat import system_prompt
    from openenv.server import create_app, serve_in_background

    with serve_in_background(create_app(EchoEnv)) as server:
        schema = json.loads(urllib.request.urlopen(server.url + "/schema").read())
    space = ActionSpace.from_schema(schema)
    first = observation_text(
        {"metadata": {}, "echoed_message": "Echo environment ready!", "message_length": 0}
    )
    return [
        [{"role": "system", "content": system_prompt(space, tools=tools)}, {"role": "user", "content": first}]
        for tools in (False, True)
    ]


def tool_caller() -> Path:
    """The checkpoint that answers ``REPLY`` to the basic chats and to the echo env's
    first chat (by text and by tools): one for tests/policy and tests/eval."""
    return cached_model("tool-caller", extra_prompts=echo_prompts())

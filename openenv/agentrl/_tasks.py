"""A terminal task family small enough to learn on CPU: ``name_file_tasks``.

Task ``touch-X`` asks for an empty file named ``X`` in an empty working directory. Two
checks score it (the reward is the fraction passed): ``one-file``, the directory holds
exactly one entry and it is a regular file; ``named-X``, that entry is ``X`` (``ls -A``
prints exactly ``X``, so creating every candidate fails both). ``touch X`` scores 1,
``touch`` with another letter 0.5, ``mkdir X`` or ``rm X`` 0. The right command is a few
tokens; its verb is the same for every task, its letter is read off the instruction.
The folders are in the terminal env's task layout (served with ``tasks_dir``); texts are
lower case, as the ``tiny`` alphabet has no capitals. ``command_prior`` makes a small
model that answers in the form of a command, to start from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["command_prior", "name_file_tasks"]

_TOML = """version = "1.0"

[metadata]
category = "files"
difficulty = "easy"
author_name = "openenv"

[verifier]
timeout_sec = 30.0

[agent]
timeout_sec = 120.0
"""

_CHECKS = """# The reward is the fraction of checks passed.
[[check]]
name = "one-file"
run = 'test "$(ls -A | wc -l)" -eq 1 && test "$(find . -mindepth 1 -maxdepth 1 -type f | wc -l)" -eq 1'

[[check]]
name = "named-{letter}"
run = 'test -f {letter} && ls -A'
stdout = "{letter}"
"""


def name_file_tasks(dest: str | Path, letters: str = "abcd") -> list[str]:
    """Write the family's tasks (one per letter) under ``dest``; their ids, in order."""
    root = Path(dest)
    ids = []
    for letter in letters:
        if not letter.isalpha() or not letter.isascii():
            raise ValueError(f"a task letter must be an ASCII letter, not {letter!r}")
        task = root / f"touch-{letter}"
        (task / "tests").mkdir(parents=True, exist_ok=True)
        (task / "solution").mkdir(exist_ok=True)
        (task / "instruction.md").write_text(f"create an empty file named {letter}.\n")
        (task / "task.toml").write_text(_TOML)
        (task / "tests" / "checks.toml").write_text(_CHECKS.format(letter=letter))
        (task / "solution" / "solve.sh").write_text(f"#!/bin/bash\ntouch {letter}\n")
        ids.append(task.name)
    return ids


def command_prior(
    dest: str | Path,
    instructions: list[str],
    commands: list[str],
    *,
    steps: int = 150,
    batch: int = 16,
    lr: float = 3e-3,
    seed: int = 0,
    match: float = 0.0,
) -> Path:
    """A small random Hugging Face model (``random_hf_model``) fine-tuned to answer the
    ``SimpleShellAgent``'s first call on ``instructions[i]`` with ``commands[i]`` a
    fraction ``match`` of the time and with one of ``commands`` drawn blindly the rest:
    with ``match=0`` it learns the form of an answer, not which command fits which task.
    Saved to ``dest``."""
    if match > 0 and len(commands) != len(instructions):
        raise ValueError("with match > 0, give one command per instruction")
    import random

    import torch
    import transformers

    from ..train import random_hf_model
    from ._simple import first_messages

    path = random_hf_model(dest, seed=seed)
    tok: Any = transformers.AutoTokenizer.from_pretrained(path)
    model: Any = transformers.AutoModelForCausalLM.from_pretrained(path)
    prompts = [
        _ids(tok.apply_chat_template(first_messages(i), add_generation_prompt=True)) for i in instructions
    ]
    targets = [[*tok(c, add_special_tokens=False)["input_ids"], tok.eos_token_id] for c in commands]
    rng = random.Random(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    model.train()
    for _ in range(steps):
        picks = [rng.randrange(len(prompts)) for _ in range(batch)]
        pairs = [(prompts[i], targets[i] if rng.random() < match else rng.choice(targets)) for i in picks]
        width = max(len(p) + len(t) for p, t in pairs)
        ids = torch.full((batch, width), tok.pad_token_id, dtype=torch.long)
        labels = torch.full((batch, width), -100, dtype=torch.long)
        mask = torch.zeros((batch, width), dtype=torch.long)
        for i, (p, t) in enumerate(pairs):
            ids[i, : len(p) + len(t)] = torch.tensor(p + t)
            labels[i, len(p) : len(p) + len(t)] = torch.tensor(t)
            mask[i, : len(p) + len(t)] = 1
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.save_pretrained(path)
    return path


def _ids(rendered: Any) -> list[int]:
    ids = rendered["input_ids"] if hasattr(rendered, "keys") else rendered
    return [int(i) for i in ids]

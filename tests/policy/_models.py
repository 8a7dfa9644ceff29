"""A local checkpoint that says one thing: a small Llama with a character tokenizer,
trained here in a few seconds to answer any chat with ``REPLY`` (a tool call), so the
server's tool-call path is driven by a real model. Nothing is downloaded."""

from __future__ import annotations

import string
from pathlib import Path

REPLY = '<tool_call>{"name": "echo_action", "arguments": {"message": "hi"}}</tool_call>'
TEMPLATE = (
    "{% for m in messages %}{{ '<|' + m['role'] + '|>' + m['content'] }}"
    "{% if m['role'] == 'assistant' %}{{ eos_token }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def make_model(
    path: Path, reply: str = REPLY, steps: int = 400, extra_prompts: list[list[dict[str, str]]] | None = None
) -> Path:
    """Train and save the model; ``extra_prompts``: more chats it must answer with ``reply``."""
    import torch
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    specials = ["<pad>", "<s>", "</s>", "<unk>", "<|user|>", "<|assistant|>", "<|system|>", "<|tool|>"]
    chars = [c for c in string.printable if c not in "\r\x0b\x0c"]
    vocab = {tok: i for i, tok in enumerate([*specials, *chars])}
    core = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.Split("", behavior="isolated")
    core.decoder = decoders.Fuse()
    tok = transformers.PreTrainedTokenizerFast(
        tokenizer_object=core,
        bos_token="<s>",
        eos_token="</s>",
        pad_token="<pad>",
        unk_token="<unk>",
        additional_special_tokens=specials[4:],
    )
    tok.chat_template = TEMPLATE
    config = transformers.LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=2,
        pad_token_id=0,
    )
    torch.manual_seed(0)
    model = transformers.LlamaForCausalLM(config)
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

"""``LLMJudge`` with ``openenv policy serve`` as its OpenAI-compatible backend: a local
checkpoint trained here to answer the judge's prompts with a fixed tagged score, served
over loopback and asked through the official openai SDK (greedy, so deterministic)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

pytest.importorskip("torch", reason="a local checkpoint needs the train extra (torch)")
pytest.importorskip("transformers", reason="a Hugging Face checkpoint needs transformers")
pytest.importorskip("openai", reason="the eval extra brings the openai SDK")

from openenv.policy import LocalModel, serve_app
from openenv.rewards import LLMJudge, OpenAIChat
from openenv.server import serve_in_background

from ..policy._models import cached_model

pytestmark = [pytest.mark.slow, pytest.mark.timeout(400)]
REPLY = "<score>8</score>"
PROMPTS = ["Rate the answer: hello", "Rate the answer: bye"]


def test_a_served_checkpoint_scores_through_the_judge() -> None:
    path = cached_model(
        "judge", reply=REPLY, extra_prompts=[[{"role": "user", "content": p}] for p in PROMPTS]
    )
    with serve_in_background(serve_app(LocalModel(str(path)), model_name="judge", api_key="k1")) as server:
        client = OpenAIChat("judge", base_url=server.url + "/v1", api_key="k1", max_tokens=40)
        judge = LLMJudge("Rate the answer: {action.message}", client, score_range=(0, 10))
        obs = SimpleNamespace(reward=None, done=False, metadata={})
        scores = [judge(SimpleNamespace(message=m), obs) for m in ("hello", "bye")]
        assert judge.last_judgement is not None
        assert judge.last_judgement.reply == REPLY
        assert scores == [pytest.approx(0.8), pytest.approx(0.8)]
        assert judge(SimpleNamespace(message="hello"), obs) == pytest.approx(0.8)
        assert judge.requests_sent == 2  # the third call was a cache hit

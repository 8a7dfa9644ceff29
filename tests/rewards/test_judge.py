"""``LLMJudge`` against a scripted chat server (a test double, ``_scripted_llm``) through
the official SDKs: the score rule, parse failures kept with the reply, the cache (memory
and disk: no second request), the concurrency bound, retries, and a refused key."""

from __future__ import annotations

import asyncio
from pathlib import Path
from types import SimpleNamespace

import pytest

pytest.importorskip("openai", reason="the eval extra brings the openai SDK")
pytest.importorskip("anthropic", reason="the eval extra brings the anthropic SDK")

from openenv._exceptions import JudgeError
from openenv.rewards import AnthropicChat, LLMJudge, OpenAIChat, WeightedSum

from ._scripted_llm import ScriptedLLM

pytestmark = pytest.mark.timeout(120)
TEMPLATE = "Rate: {action.message}"


def _act(message: str) -> SimpleNamespace:
    return SimpleNamespace(message=message)


def _obs() -> SimpleNamespace:
    return SimpleNamespace(reward=None, done=False, metadata={})


def _judge(server: ScriptedLLM, **options: object) -> LLMJudge:
    client = OpenAIChat("judge-model", base_url=server.url + "/v1", api_key="k1")
    return LLMJudge(TEMPLATE, client, backoff_s=0.01, **options)  # type: ignore[arg-type]


def test_a_tagged_score_in_a_range_is_normalised_and_the_reply_kept() -> None:
    with ScriptedLLM(lambda p, n: "Good answer. <score>7</score>") as server:
        judge = _judge(server, score_range=(0, 10))
        obs = judge.apply(_act("hello"), _obs())
    assert obs.reward == pytest.approx(0.7)
    assert server.prompts == ["Rate: hello"]
    assert server.bodies[0]["model"] == "judge-model"
    assert server.bodies[0]["temperature"] == 0.0
    record = obs.metadata["judge"]["judge"]
    assert record["reply"] == "Good answer. <score>7</score>"
    assert record["parsed"]
    assert record["raw"] == 7.0


@pytest.mark.parametrize(
    ("reply", "why"),
    [("I like it a lot", "no score in the reply"), ("<score>11</score>", "11.0 is outside [0.0, 10.0]")],
)
def test_an_unreadable_reply_scores_the_declared_default_and_is_recorded(reply: str, why: str) -> None:
    with ScriptedLLM(lambda p, n: reply) as server:
        judge = _judge(server, score_range=(0, 10), default_score=0.25)
        score = judge(_act("x"), _obs())
    assert score == 0.25
    j = judge.last_judgement
    assert j is not None
    assert not j.parsed
    assert j.reply == reply
    assert j.error == why


def test_the_number_rule_and_a_regex_rule() -> None:
    with ScriptedLLM(lambda p, n: "Score: 4 out of 5") as server:
        assert _judge(server, score="number", score_range=(1, 5))(_act("a"), _obs()) == pytest.approx(0.75)
        assert _judge(server, score=r"out of (\d)", normalize=False, score_range=(0, 5))(
            _act("b"), _obs()
        ) == pytest.approx(5.0)


def test_a_cached_prompt_sends_no_second_request_in_memory_or_on_disk(tmp_path: Path) -> None:
    with ScriptedLLM(lambda p, n: "<score>1</score>") as server:
        judge = _judge(server, cache_dir=tmp_path / "cache")
        assert judge(_act("same"), _obs()) == 1.0
        assert judge.clone()(_act("same"), _obs()) == 1.0  # a clone shares the cache
        assert len(server.prompts) == 1
        again = _judge(server, cache_dir=tmp_path / "cache")  # a new judge: from disk
        assert again(_act("same"), _obs()) == 1.0
        assert again.last_judgement is not None
        assert again.last_judgement.cached
        assert len(server.prompts) == 1
        assert again(_act("other"), _obs()) == 1.0
        assert len(server.prompts) == 2
        uncached = _judge(server, cache=False)
        uncached(_act("same"), _obs())
        assert len(server.prompts) == 3


def test_identical_prompts_in_flight_share_one_request() -> None:
    with ScriptedLLM(lambda p, n: "<score>0.5</score>", delay_s=0.3) as server:
        judge = _judge(server)

        async def main() -> list[float]:
            return await asyncio.gather(*(judge.acall(_act("dup"), _obs()) for _ in range(5)))

        assert asyncio.run(main()) == [0.5] * 5
    assert len(server.prompts) == 1


def test_concurrency_is_bounded() -> None:
    # the first three requests wait for each other at the server (the gate): three in flight
    with ScriptedLLM(lambda p, n: "<score>1</score>", delay_s=0.2, gate=3) as server:
        judge = _judge(server, concurrency=3)
        clone = judge.clone()  # the bound is shared by clones

        async def main() -> list[float]:
            return await asyncio.gather(
                *(r.acall(_act(f"m{i}"), _obs()) for i in range(12) for r in (judge, clone))
            )

        assert asyncio.run(main()) == [1.0] * 24
    assert len(server.prompts) == 12  # each distinct prompt once
    assert server.max_in_flight == 3
    assert judge.max_in_flight <= 3


def test_transient_errors_are_retried_with_backoff_then_give_up() -> None:
    script = {1: (503, "overloaded"), 2: (429, "slow down")}
    with ScriptedLLM(lambda p, n: script.get(n, "<score>1</score>")) as server:
        judge = _judge(server, retries=2)
        assert judge(_act("r"), _obs()) == 1.0
        assert len(server.prompts) == 3
        assert judge.requests_sent == 3
    with ScriptedLLM(lambda p, n: (500, "down")) as server:
        judge = _judge(server, retries=1)
        with pytest.raises(JudgeError, match=r"kept failing \(2 tries\)"):
            judge(_act("r"), _obs())
        assert len(server.prompts) == 2


def test_a_refused_key_is_a_clear_error_at_once() -> None:
    with ScriptedLLM(lambda p, n: "<score>1</score>", key="right") as server:
        judge = _judge(server, retries=3)
        with pytest.raises(JudgeError, match="refused the key"):
            judge(_act("x"), _obs())
        assert len(server.prompts) == 1  # no retry of a 401


def test_a_bad_request_is_not_retried_and_a_bad_template_is_named() -> None:
    with ScriptedLLM(lambda p, n: (400, "no such model")) as server:
        with pytest.raises(JudgeError, match="no such model"):
            _judge(server)(_act("x"), _obs())
        assert len(server.prompts) == 1
        with pytest.raises(JudgeError, match="template"):
            LLMJudge("{nope}", OpenAIChat("m", base_url=server.url + "/v1", api_key="k1"))(_act("x"), _obs())


def test_anthropic_messages_api_and_a_judge_inside_a_weighted_sum() -> None:
    with ScriptedLLM(lambda p, n: "<score>0.4</score>") as server:
        client = AnthropicChat("claude-judge", base_url=server.url, api_key="k1", system_prompt="be fair")
        judge = LLMJudge(TEMPLATE, client)
        total = WeightedSum({"judge": judge, "len": lambda a, o: 1.0}, weights=[0.5, 0.5])
        obs = total.apply(_act("hi"), _obs())
    assert obs.reward == pytest.approx(0.7)
    assert obs.metadata["reward_breakdown"]["judge"] == pytest.approx(0.4)
    assert obs.metadata["judge"]["judge"]["reply"] == "<score>0.4</score>"  # a judge inside: under its path
    assert server.bodies[0]["system"] == "be fair"
    assert server.bodies[0]["model"] == "claude-judge"
    assert server.bodies[0]["temperature"] == 0.0
    assert judge.judgement_record()["reply"] == "<score>0.4</score>"  # type: ignore[index]


def test_bad_settings_are_value_errors() -> None:
    with pytest.raises(ValueError, match="score_range"):
        LLMJudge("x", OpenAIChat("m", base_url="http://127.0.0.1:9/v1"), score_range=(1, 1))
    with pytest.raises(ValueError, match="openai:MODEL"):
        LLMJudge("x", "gemini:pro")


def test_upstream_names_map_onto_the_judge() -> None:
    from openenv.core.llm_client import AnthropicClient, OpenAIClient, create_llm_client
    from openenv.core.rubrics import LLMJudge as UpstreamJudge
    from openenv.core.rubrics import Rubric as UpstreamRubric

    replies = {"Rate: a": "Score: 0.7", "Rate: b": "1.5, I think", "Rate: c": "cannot say"}
    with ScriptedLLM(lambda p, n: replies[p]) as server:
        port = int(server.url.rsplit(":", 1)[1])
        judge = UpstreamJudge(
            TEMPLATE, OpenAIClient("http://127.0.0.1", port, "m", api_key="k1"), default_score=0.1
        )
        assert isinstance(judge, UpstreamRubric)

        async def main() -> list[float]:
            return [await judge(_act(m), _obs()) for m in "abc"]  # upstream's awaitable call

        assert asyncio.run(main()) == [pytest.approx(0.7), 1.0, 0.1]
        assert judge.last_judgement is not None
        assert judge.last_judgement.reply == "cannot say"
        assert not judge.last_judgement.parsed
        raw = UpstreamJudge(
            TEMPLATE, OpenAIClient(server.url + "/v1", None, "m", api_key="k1"), normalize=False
        )
        assert asyncio.run(raw.acall(_act("b"), _obs())) == 1.5
        claude = AnthropicClient("http://127.0.0.1", port, "c", api_key="k1", system_prompt="s")
        assert asyncio.run(claude.complete("Rate: a")) == "Score: 0.7"
    assert server.bodies[-1]["system"] == "s"
    with pytest.raises(ValueError, match="conflicts with port"):
        OpenAIClient("http://127.0.0.1:80", 81, "m")
    o1 = create_llm_client("OpenAI", "o1-preview", "sk")
    assert o1.max_completion_tokens  # type: ignore[attr-defined]
    assert o1.endpoint == "https://api.openai.com/v1"
    with pytest.raises(ValueError, match="Unsupported provider"):
        create_llm_client("gemini", "m", "k")

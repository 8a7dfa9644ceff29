"""Composable rewards: rubrics that score ``(action, observation)``, sync or async.

No extra needed. A rubric is a ``Rubric`` subclass with ``forward`` (plain or
``async def``) or any function ``fn(action, observation) -> float``; compose them with
``WeightedSum``, ``Gate`` and ``Sequential``; pay at the end of an episode with
``TrajectoryRubric`` / ``DiscountedTrajectoryRubric``; ask a chat model with ``LLMJudge``
(the ``eval`` extra: OpenAI-compatible or Anthropic); score from another process with
``HttpRubric`` (served by ``RewardServer``). ``with_rubric(EnvCls, rubric)`` plugs a
rubric into any env; each component's score travels in
``observation.metadata["reward_breakdown"]``::

    from openenv.rewards import EnvReward, Gate, WeightedSum, with_rubric

    def polite(action, obs) -> float:
        return 1.0 if "please" in action.message else 0.0

    rubric = WeightedSum({"polite": Gate(polite), "env": EnvReward()}, weights=[0.5, 0.5])
    PoliteEcho = with_rubric(EchoEnv, rubric)    # serve it: create_app(PoliteEcho)
"""

from ._containers import Gate, Sequential, WeightedSum
from ._external import HttpRubric, RewardServer
from ._judge import Judgement, LLMJudge, judge_from_spec
from ._llm import AnthropicChat, LLMClient, OpenAIChat
from ._rubric import EnvReward, FunctionRubric, Rubric, as_rubric, judgements
from ._trajectory import DiscountedTrajectoryRubric, TrajectoryRubric
from ._wrap import with_rubric

__all__ = [
    "AnthropicChat",
    "DiscountedTrajectoryRubric",
    "EnvReward",
    "FunctionRubric",
    "Gate",
    "HttpRubric",
    "Judgement",
    "LLMClient",
    "LLMJudge",
    "OpenAIChat",
    "RewardServer",
    "Rubric",
    "Sequential",
    "TrajectoryRubric",
    "WeightedSum",
    "as_rubric",
    "judge_from_spec",
    "judgements",
    "with_rubric",
]

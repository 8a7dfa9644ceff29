"""Upstream's Harbor wire types: a task reference, a captured turn, a rollout's result.

Filled by ``terminal_env._rollout`` from an ``openenv.eval`` trajectory; fields this
project has nothing for keep upstream's defaults, and unknown ones are kept (a result
upstream's server wrote validates here).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .._models import State


class HarborTaskRef(BaseModel):
    """One task as the Task API lists it."""

    index: int
    task_id: str
    task_name: str
    dataset: str = ""
    instruction: str = ""


class HarborTurn(BaseModel):
    """One model call of a rollout: its token ids when the policy returned them."""

    model_config = ConfigDict(extra="allow")

    turn: int
    role: str = "agent"
    finish_reason: str | None = None
    prompt_token_ids: list[int] = Field(default_factory=list)
    completion_token_ids: list[int] = Field(default_factory=list)
    per_token_logps: list[float] = Field(default_factory=list)
    loss_mask: list[int] | None = None
    node_id: str = ""
    n_tools: int = 0
    discarded: bool = False
    trainable: bool = True
    text: str = ""
    tool_calls: list[dict[str, Any]] = Field(default_factory=list)
    request_messages: list[dict[str, Any]] = Field(default_factory=list)
    request_tools: list[dict[str, Any]] | None = None


class HarborRolloutResult(BaseModel):
    """What one rollout produced; a failed one has ``ok=False`` and ``reward=None``."""

    model_config = ConfigDict(extra="allow")

    task_id: str = ""
    task_name: str = ""
    dataset: str = ""
    harness: str = ""
    sandbox: str = ""
    trial_name: str = ""
    session_id: str = ""
    reward: float | None = None
    rewards: dict[str, float] = Field(default_factory=dict)
    reward_key: str = ""
    rollout_type: str = "train"
    capture_level: str = "tokens"
    param_fixes: list[str] = Field(default_factory=list)
    turns: list[HarborTurn] = Field(default_factory=list)
    n_turns: int = 0
    n_roots: int = 0
    n_trainable_tokens: int = 0
    multi_turn: bool = False
    atif: str = "none"
    trace_source: str = ""
    findings: list[str] = Field(default_factory=list)
    wall_s: float = 0.0
    phase_timings: dict[str, float] = Field(default_factory=dict)
    agent_log_tail: str = ""
    ok: bool = True
    error: str | None = None
    exception_type: str | None = None

    @property
    def trainable(self) -> bool:
        return self.rollout_type == "train"

    @property
    def solved(self) -> bool:
        """Graded and positive (``reward is None``: the verifier never ran)."""
        return self.reward is not None and self.reward > 0


class HarborState(State):
    """Per-session counters (upstream's; the terminal env's own state is ``TerminalState``)."""

    rollouts_completed: int = 0
    last_reward: float | None = None
    last_task_id: str | None = None
    last_trial_name: str | None = None
    llm_url: str = ""
    intercept_url: str = ""

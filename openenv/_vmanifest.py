"""The ``validation:`` block of ``openenv.yaml`` (RFC 008): what an env declares about
its rewards, resources, capabilities, network and execution, in upstream 0.10's keys.

A block written for upstream loads here. An unknown key or a value of the wrong type
is a ``ManifestError`` of one line naming the key (``validation.reward.range: ...``).
"""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from ._exceptions import ManifestError


class _Block(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RewardDeclaration(_Block):
    range: tuple[float, float] = (0.0, 1.0)
    oracle_tolerance: float = Field(default=0.0, ge=0.0)
    floor_margin: float = Field(ge=0.0)
    variance_tolerance: float | None = Field(default=None, ge=0.0)

    @model_validator(mode="after")
    def _increasing(self) -> RewardDeclaration:
        if not self.range[0] < self.range[1]:
            raise ValueError(f"range {list(self.range)} must go from low to high")
        return self


class ResourceDeclaration(_Block):
    cpu: float = Field(gt=0.0)
    memory_mb: int = Field(gt=0)
    disk_mb: int = Field(gt=0)
    episode_timeout_s: float = Field(gt=0.0)
    gpus: int = Field(default=0, ge=0)
    gpu_types: list[str] = Field(default_factory=list)


class NetworkPolicy(_Block):
    mode: Literal["public", "no-network", "allowlist"] = "public"
    allowed_hosts: list[str] = Field(default_factory=list)

    @model_validator(mode="after")
    def _hosts(self) -> NetworkPolicy:
        if (self.mode == "allowlist") != bool(self.allowed_hosts):
            raise ValueError("allowed_hosts goes with mode 'allowlist', and only with it")
        return self


class OracleDeclaration(_Block):
    form: Literal["injected_state", "script"]
    location: str


class VerifierBinding(_Block):
    kind: Literal["reward_channel", "script"]
    entry: str | None = None


class CapabilitiesSpec(_Block):
    oracle: OracleDeclaration | None = None
    verifier: VerifierBinding
    set_state: bool = False
    llm_judged: bool = False
    rubric_tree: bool = False
    task_api: bool = False
    canaries: str | None = None
    declared_tools: list[str] = Field(default_factory=list)
    declared_task_count: dict[str, int] = Field(default_factory=dict)


class TypeSpec(_Block):
    tags: list[str] = Field(min_length=1)


class JudgePin(_Block):
    model: str
    version: str
    params: dict[str, Any] = Field(default_factory=dict)


class TaskDistributionPin(_Block):
    generator_seed: int | None = None
    dataset_version: str | None = None
    generator_model: str | None = None


class ExecutionDeclaration(_Block):
    kind: Literal["openenv_ws"] = "openenv_ws"
    probe_path: str = "validation/runtime.json"
    dockerfile: str = "Dockerfile"
    context: str = "."
    agent_boundary: Literal["api"] = "api"
    requires_credentials: bool = False

    @field_validator("probe_path", "dockerfile", "context")
    @classmethod
    def _relative(cls, value: str) -> str:
        path = PurePosixPath(value)
        if not value or path.is_absolute() or ".." in path.parts or "\\" in value:
            raise ValueError("must be a path inside the package, without '..'")
        return value


class ValidationBlock(_Block):
    """The whole ``validation:`` block."""

    reward: RewardDeclaration
    resources: ResourceDeclaration
    capabilities: CapabilitiesSpec
    types: TypeSpec
    network: NetworkPolicy = Field(default_factory=NetworkPolicy)
    judge: JudgePin | None = None
    task_distribution: TaskDistributionPin | None = None
    execution: ExecutionDeclaration | None = None

    @model_validator(mode="after")
    def _judge(self) -> ValidationBlock:
        if self.capabilities.llm_judged and (self.judge is None or self.reward.variance_tolerance is None):
            raise ValueError("capabilities.llm_judged needs judge and reward.variance_tolerance")
        if self.judge is not None and not self.capabilities.llm_judged:
            raise ValueError("judge is declared but capabilities.llm_judged is false")
        return self


def parse_validation_block(raw: Any, where: str = "openenv.yaml") -> ValidationBlock:
    """The block, or a one-line ``ManifestError`` naming the first bad key."""
    if not isinstance(raw, dict):
        raise ManifestError(f"{where}: validation must be a mapping, not {type(raw).__name__}")
    try:
        return ValidationBlock.model_validate(raw)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)  # a misspelt key first: it explains the rest
        err = min(errors, key=lambda e: e["type"] != "extra_forbidden")
        key = ".".join(["validation", *(str(p) for p in err["loc"])])
        message = "unknown key" if err["type"] == "extra_forbidden" else err["msg"]
        more = f" (+{exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise ManifestError(f"{where}: {key}: {message}{more}") from None

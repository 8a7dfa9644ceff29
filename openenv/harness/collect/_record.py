"""One collected episode as a record, and the append-only JSONL file that holds them.

``results.jsonl`` has one ``EpisodeRecord`` a line (``episode_id``, ``messages``,
``reward``, ``done``, ``tool_trace``, ``metrics``, ``verify_metrics``, ``artifacts``,
``task``, ``extra``): the ``messages`` column feeds TRL's ``SFTTrainer`` as is.
``metadata.json`` beside it describes the run.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, BinaryIO

from .._rollout import resolve_env_reward
from .._types import HarnessRolloutResult, VerifyResult, tool_trace_to_plain

__all__ = ["METADATA_FILENAME", "RESULTS_FILENAME", "EpisodeRecord", "RolloutSerializer"]

RESULTS_FILENAME = "results.jsonl"
METADATA_FILENAME = "metadata.json"


@dataclass
class EpisodeRecord:
    """One episode as written to ``results.jsonl`` (JSON-ready values only)."""

    episode_id: str
    messages: list[dict[str, Any]]
    reward: float
    done: bool
    tool_trace: list[dict[str, Any]]
    metrics: dict[str, Any]
    verify_metrics: dict[str, Any]
    artifacts: dict[str, Any]
    task: Any = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_rollout(
        cls,
        episode_id: str,
        rollout: HarnessRolloutResult,
        verify: VerifyResult,
        task: Any = None,
        extra: dict[str, Any] | None = None,
    ) -> EpisodeRecord:
        """The record of a rollout; its reward is the env's (``ValueError`` if ``verify`` contradicts it)."""
        return cls(
            episode_id=episode_id,
            messages=[dict(m) for m in rollout.messages],
            reward=resolve_env_reward(rollout, verify),
            done=rollout.done or verify.done,
            tool_trace=tool_trace_to_plain(rollout),
            metrics=dict(rollout.metrics),
            verify_metrics=dict(verify.metrics),
            artifacts=dict(verify.artifacts),
            task=task,
            extra=dict(extra or {}),
        )

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EpisodeRecord:
        """A record read back from one JSONL line (unknown keys ignored)."""
        names = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})

    def to_dict(self) -> dict[str, Any]:
        """The record as plain JSON data (anything JSON cannot hold becomes its ``str``)."""
        plain: dict[str, Any] = json.loads(json.dumps(asdict(self), default=str))
        return plain


class RolloutSerializer:
    """Appends episodes to ``output_dir/results.jsonl``; reads back what is there (for resume)."""

    def __init__(self, output_dir: Path | str) -> None:
        self._output_dir = Path(output_dir)

    @property
    def output_dir(self) -> Path:
        return self._output_dir

    @property
    def results_path(self) -> Path:
        return self._output_dir / RESULTS_FILENAME

    @property
    def metadata_path(self) -> Path:
        return self._output_dir / METADATA_FILENAME

    def write_episode(self, record: EpisodeRecord) -> None:
        """Append one line; a last line left without its newline (a cut-off write) is checked first."""
        self._output_dir.mkdir(parents=True, exist_ok=True)
        line = (json.dumps(record.to_dict(), default=str) + "\n").encode()
        with self.results_path.open("a+b") as handle:
            handle.write(self._separator(handle) + line)

    def write_metadata(self, metadata: dict[str, Any]) -> None:
        self._output_dir.mkdir(parents=True, exist_ok=True)
        self.metadata_path.write_text(json.dumps(metadata, indent=2, default=str), encoding="utf-8")

    def read_episodes(self) -> list[EpisodeRecord]:
        """Every record in ``results.jsonl`` (none when there is no file)."""
        return [EpisodeRecord.from_dict(data) for _, data in self._lines()]

    def collected_episode_ids(self) -> set[str]:
        """The episode ids already written.

        Raises:
            ValueError: a non-empty line is not a JSON object with a string ``episode_id``.
        """
        return {data["episode_id"] for _, data in self._lines()}

    def _lines(self) -> list[tuple[int, dict[str, Any]]]:
        if not self.results_path.exists():
            return []
        with self.results_path.open("rb") as handle:
            return [(n, self._parse(raw, n)) for n, raw in enumerate(handle, start=1) if raw.strip()]

    def _parse(self, raw: bytes, where: int | str) -> dict[str, Any]:
        location = f"{self.results_path}:{where}"
        try:
            data = json.loads(raw.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise ValueError(f"{location}: invalid UTF-8: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ValueError(f"{location}: invalid JSON: {exc.msg}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("episode_id"), str):
            raise ValueError(f"{location}: expected an object with a string episode_id")
        return data

    def _separator(self, handle: BinaryIO) -> bytes:
        end = handle.seek(0, os.SEEK_END)
        if end == 0:
            return b""
        handle.seek(end - 1)
        if handle.read(1) == b"\n":
            return b""
        tail = b""
        cursor = end
        while cursor and b"\n" not in tail:  # the unterminated last line, read backwards in blocks
            size = min(cursor, 8192)
            cursor -= size
            handle.seek(cursor)
            tail = handle.read(size) + tail
        last = tail.rsplit(b"\n", 1)[-1]
        if last.strip():
            self._parse(last, "last line")
        return b"\n"

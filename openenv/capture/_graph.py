"""A rollout's model calls as a graph, linked by exact token prefix.

Each call is a ``TurnNode``: the prompt ids the backend tokenised, the ids it sampled and
their logprobs. A call's parent is the earlier call whose prompt + sampled ids is the
longest exact prefix of this call's prompt, so a multi-turn conversation is one path,
a second continuation of the same call is a fork, and a call whose history was edited
(a new system prompt, a rewritten message) is a new root. Nothing is re-tokenised.

Calls without token ids (a backend that returns text only) are linked the same way on
their message lists instead, so an eval rollout still has its structure.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any


@dataclass
class TurnNode:
    """One model call (upstream's field names)."""

    node_id: str
    prompt_ids: list[int]
    sampled_ids: list[int]
    sampled_logprobs: list[float] | None = None
    parent_id: str | None = None
    index: int = 0
    model: str | None = None
    finish_reason: str | None = None
    n_tools: int = 0
    api_type: str = ""
    request_messages: list[dict[str, Any]] = field(default_factory=list)
    request_tools: list[dict[str, Any]] | None = None
    response_message: dict[str, Any] = field(default_factory=dict)

    @property
    def end_ids(self) -> list[int]:
        """The sequence after this call: its prompt, then what it sampled."""
        return self.prompt_ids + self.sampled_ids

    @property
    def usable(self) -> bool:
        """Whether the call is training data: prompt ids, and one logprob per sampled id."""
        lps = self.sampled_logprobs
        return (
            bool(self.prompt_ids)
            and bool(self.sampled_ids)
            and lps is not None
            and len(lps) == len(self.sampled_ids)
        )


@dataclass
class TrainingSequence:
    """One root-to-leaf path flattened: ids, a mask (1 on sampled ids) and logprobs."""

    input_ids: list[int]
    loss_mask: list[int]
    logprobs: list[float]
    node_ids: list[str]
    prompt_len: int
    root_id: str

    @property
    def n_turns(self) -> int:
        return len(self.node_ids)

    @property
    def n_trainable(self) -> int:
        return sum(self.loss_mask)

    def turn_lengths(self) -> list[int]:
        """Sampled ids per turn, from the runs of 1s in the mask."""
        runs: list[int] = []
        prev = 0
        for bit in self.loss_mask:
            if bit and not prev:
                runs.append(0)
            if bit:
                runs[-1] += 1
            prev = bit
        return runs


def _message_key(message: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a chat message across dialects: role, text, tool calls, tool result id."""
    calls = tuple(
        (c.get("function", {}).get("name"), c.get("function", {}).get("arguments"))
        for c in message.get("tool_calls") or []
    )
    return (message.get("role"), message.get("content") or "", calls, message.get("tool_call_id"))


def _is_prefix(short: list[Any], long: list[Any]) -> bool:
    return len(short) <= len(long) and long[: len(short)] == short


class RolloutGraph:
    """Every call of one rollout, in arrival order, each linked to its parent."""

    def __init__(self) -> None:
        self._nodes: dict[str, TurnNode] = {}
        self._children: dict[str, list[str]] = {}
        self._by_end: dict[int, list[TurnNode]] = {}  # calls with ids, by len(prompt + sampled)

    def __len__(self) -> int:
        return len(self._nodes)

    def add_turn(self, node: TurnNode) -> TurnNode:
        """Link ``node`` to its parent and append it (its ``index`` is its arrival order)."""
        node.index = len(self._nodes)
        node.parent_id = self._parent_of(node)
        self._nodes[node.node_id] = node
        self._children[node.node_id] = []
        if node.prompt_ids:
            self._by_end.setdefault(len(node.prompt_ids) + len(node.sampled_ids), []).append(node)
        if node.parent_id is not None:
            self._children[node.parent_id].append(node.node_id)
        return node

    def _parent_of(self, node: TurnNode) -> str | None:
        """The earlier call whose prompt + sampled ids (or, without ids, whose messages and
        reply) is the longest exact prefix of this call's."""
        prompt = node.prompt_ids
        if prompt:  # the longest end first; among equals, the earliest call
            for length in sorted((n for n in self._by_end if n <= len(prompt)), reverse=True):
                for cand in self._by_end[length]:
                    n = len(cand.prompt_ids)
                    if n < length and prompt[n:length] == cand.sampled_ids and prompt[:n] == cand.prompt_ids:
                        return cand.node_id
            return None
        best: TurnNode | None = None
        best_len = 0
        keys = [_message_key(msg) for msg in node.request_messages]
        for cand in self._nodes.values():
            if not cand.prompt_ids:
                end = [_message_key(msg) for msg in [*cand.request_messages, cand.response_message]]
                length, ok = len(end), _is_prefix(end, keys)
            else:
                continue
            if ok and length > best_len:
                best, best_len = cand, length
        return best.node_id if best else None

    def nodes(self) -> list[TurnNode]:
        return list(self._nodes.values())

    def get(self, node_id: str) -> TurnNode:
        return self._nodes[node_id]

    def children(self, node_id: str) -> list[TurnNode]:
        return [self._nodes[i] for i in self._children[node_id]]

    def roots(self) -> list[TurnNode]:
        return [n for n in self._nodes.values() if n.parent_id is None]

    def leaves(self) -> list[TurnNode]:
        return [n for n in self._nodes.values() if not self._children[n.node_id]]

    def forks(self) -> list[tuple[str, list[str]]]:
        """Calls continued more than once: ``(node_id, child ids)``."""
        return [(i, list(kids)) for i, kids in self._children.items() if len(kids) > 1]

    def root_of(self, node_id: str) -> str:
        return self.path_to(node_id)[0].node_id

    def path_to(self, node_id: str) -> list[TurnNode]:
        path = [self._nodes[node_id]]
        while path[-1].parent_id is not None:
            path.append(self._nodes[path[-1].parent_id])
        return path[::-1]

    def paths(self) -> Iterator[list[TurnNode]]:
        for leaf in self.leaves():
            yield self.path_to(leaf.node_id)

    def discarded_nodes(self) -> list[TurnNode]:
        """Leaves beside a sibling that went on: a retry or resample the agent dropped."""
        out: list[TurnNode] = []
        for _, kids in self.forks():
            if any(self._children[k] for k in kids):
                out.extend(self._nodes[k] for k in kids if not self._children[k])
        return out

    def sequence_for(self, leaf_id: str) -> TrainingSequence:
        """The path to ``leaf_id`` flattened; a call without usable logprobs is context (mask 0)."""
        path = self.path_to(leaf_id)
        ids: list[int] = []
        mask: list[int] = []
        lps: list[float] = []
        for node in path:
            context = node.prompt_ids[len(ids) :]
            ids += context
            mask += [0] * len(context)
            lps += [0.0] * len(context)
            ids += node.sampled_ids
            bit = 1 if node.usable else 0
            mask += [bit] * len(node.sampled_ids)
            lps += list(node.sampled_logprobs or []) if bit else [0.0] * len(node.sampled_ids)
        return TrainingSequence(
            ids, mask, lps, [n.node_id for n in path], len(path[0].prompt_ids), path[0].node_id
        )

    def sequences(self) -> list[TrainingSequence]:
        return [self.sequence_for(leaf.node_id) for leaf in self.leaves()]

    def stats(self) -> dict[str, int]:
        return {
            "n_turns": len(self._nodes),
            "n_roots": len(self.roots()),
            "n_leaves": len(self.leaves()),
            "n_forks": len(self.forks()),
            "n_discarded": len(self.discarded_nodes()),
        }

"""Stream writers: a streamed backend reply translated into each dialect as it arrives.

A writer is made per agent call (``Dialect.streamer(body)``). ``chunk`` gets each backend
chunk with what it added (``Delta``s) and returns the events to send now; ``finish`` the
closing events once the backend's stream ended and the call was recorded; ``fail`` the
dialect's error event when the backend's stream was cut (nothing follows it).
"""

from __future__ import annotations

from typing import Any, Protocol

from .._stream import Delta, StreamState
from ._base import ChatReply, sse

_ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}


class StreamWriter(Protocol):
    def chunk(self, state: StreamState, raw: dict[str, Any], deltas: list[Delta]) -> list[str]: ...

    def finish(self, state: StreamState, reply: ChatReply) -> list[str]: ...

    def fail(self, status: int, message: str) -> list[str]: ...


def _so_far(state: StreamState) -> ChatReply:
    """What a head event needs (ids, model, token counts) before the reply is whole."""
    return ChatReply(
        raw={},
        text="",
        tool_calls=[],
        finish_reason="",
        prompt_tokens=len(state.prompt_ids),
        completion_tokens=len(state.sampled_ids),
        model=state.model,
        id=state.id,
        created=state.created,
    )


class ChatWriter:
    """OpenAI chat completions: the backend's chunks as they are, less what the agent did
    not ask for (token ids, logprobs, the usage chunk)."""

    def __init__(self, body: dict[str, Any], error: Any) -> None:
        self.ids = bool(body.get("return_token_ids"))
        self.lps = bool(body.get("logprobs"))
        self.usage = bool((body.get("stream_options") or {}).get("include_usage"))
        self._error = error

    def chunk(self, state: StreamState, raw: dict[str, Any], deltas: list[Delta]) -> list[str]:
        choices = raw.get("choices")
        if not choices:
            return [sse(raw)] if self.usage and raw.get("usage") else []
        if self.ids and self.lps and self.usage:
            return [sse(raw)]
        out = {
            k: v
            for k, v in raw.items()
            if (self.ids or k != "prompt_token_ids") and (self.usage or k != "usage")
        }
        kept = []
        for choice in choices:
            c = {
                k: v for k, v in choice.items() if k != "prompt_token_ids" and (self.ids or k != "token_ids")
            }
            if not self.lps:
                c["logprobs"] = None
            kept.append(c)
        out["choices"] = kept
        return [sse(out)]

    def finish(self, state: StreamState, reply: ChatReply) -> list[str]:
        return [sse("[DONE]")]

    def fail(self, status: int, message: str) -> list[str]:
        return [sse(self._error(status, message))]


class AnthropicWriter:
    """Anthropic Messages: ``message_start``, a content block per text run or tool call
    (``text_delta`` / ``input_json_delta``), ``message_delta`` and ``message_stop``."""

    def __init__(self, body: dict[str, Any], error: Any) -> None:
        self.started = False
        self.block = -1
        self.open: Any = None  # "text", or a tool call's index
        self._error = error

    @staticmethod
    def _ev(kind: str, **data: Any) -> str:
        return sse({"type": kind, **data}, event=kind)

    def _open(self, block: dict[str, Any], what: Any) -> list[str]:
        out = self._close()
        self.block += 1
        self.open = what
        return [*out, self._ev("content_block_start", index=self.block, content_block=block)]

    def _close(self) -> list[str]:
        if self.open is None:
            return []
        self.open = None
        return [self._ev("content_block_stop", index=self.block)]

    def chunk(self, state: StreamState, raw: dict[str, Any], deltas: list[Delta]) -> list[str]:
        out: list[str] = []
        if not self.started:
            self.started = True
            message: dict[str, Any] = {
                "id": f"msg_{state.id}",
                "type": "message",
                "role": "assistant",
                "model": state.model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": len(state.prompt_ids), "output_tokens": 0},
            }
            out.append(self._ev("message_start", message=message))
        for d in deltas:
            if d.kind == "text":
                if self.open != "text":
                    out += self._open({"type": "text", "text": ""}, "text")
                delta = {"type": "text_delta", "text": d.text}
            elif d.kind == "call":
                call_id, name = state.call_head(d.index)
                block = {"type": "tool_use", "id": call_id, "name": name, "input": {}}
                out += self._open(block, d.index)
                continue
            else:
                if self.open != d.index:
                    continue  # arguments of a call that is not the open block: the reply keeps them
                delta = {"type": "input_json_delta", "partial_json": d.text}
            out.append(self._ev("content_block_delta", index=self.block, delta=delta))
        return out

    def finish(self, state: StreamState, reply: ChatReply) -> list[str]:
        out = [] if self.started else self.chunk(state, {}, [])
        out += self._close()
        stop = {"stop_reason": _ANTHROPIC_STOP.get(reply.finish_reason, "end_turn"), "stop_sequence": None}
        out.append(self._ev("message_delta", delta=stop, usage={"output_tokens": reply.completion_tokens}))
        out.append(self._ev("message_stop"))
        return out

    def fail(self, status: int, message: str) -> list[str]:
        return [sse(self._error(status, message), event="error")]


class ResponsesWriter:
    """OpenAI Responses: ``response.created``, an output item per text run or function
    call with its deltas, ``response.completed`` with the whole reply."""

    def __init__(self, dialect: Any, body: dict[str, Any]) -> None:
        self.dialect, self.body = dialect, body
        self.tools: Any = None  # the request's ToolMap, read at its first call
        self.seq = 0
        self.started = False
        self.n = -1  # output index
        self.open: Any = None  # ("message", item) or ("call", index, item)

    def _ev(self, kind: str, **data: Any) -> str:
        self.seq += 1
        return sse({"type": kind, "sequence_number": self.seq - 1, **data}, event=kind)

    def _open_message(self, state: StreamState) -> list[str]:
        out = self._close(state)
        self.n += 1
        item = {
            "type": "message",
            "id": f"msg_{state.id}",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        self.open = ("message", item)
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return [
            *out,
            self._ev("response.output_item.added", output_index=self.n, item=item),
            self._ev(
                "response.content_part.added",
                output_index=self.n,
                item_id=item["id"],
                content_index=0,
                part=part,
            ),
        ]

    def _close(self, state: StreamState) -> list[str]:
        if self.open is None:
            return []
        opened, self.open = self.open, None
        if opened[0] == "message":
            item = opened[1]
            text = "".join(state.text)
            part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
            done = {**item, "status": "completed", "content": [part]}
            ids = {"output_index": self.n, "item_id": item["id"], "content_index": 0}
            return [
                self._ev("response.output_text.done", **ids, text=text, logprobs=[]),
                self._ev("response.content_part.done", **ids, part=part),
                self._ev("response.output_item.done", output_index=self.n, item=done),
            ]
        _, index, item = opened
        args = "".join(state.calls[index]["arguments"]) or "{}"
        done = self.tools.item(item["call_id"], state.call_head(index)[1], args)
        if done["type"] == "custom_tool_call":  # its input is whole only once the arguments are
            ids = {"output_index": self.n, "item_id": item["id"]}
            return [
                self._ev("response.custom_tool_call_input.delta", **ids, delta=done["input"]),
                self._ev("response.custom_tool_call_input.done", **ids, input=done["input"]),
                self._ev("response.output_item.done", output_index=self.n, item=done),
            ]
        return [
            self._ev(
                "response.function_call_arguments.done",
                output_index=self.n,
                item_id=item["id"],
                arguments=args,
                name=item["name"],
            ),
            self._ev("response.output_item.done", output_index=self.n, item=done),
        ]

    def chunk(self, state: StreamState, raw: dict[str, Any], deltas: list[Delta]) -> list[str]:
        out: list[str] = []
        if not self.started:
            self.started = True
            head = self.dialect.reply(_so_far(state), self.body, status="in_progress")
            out += [
                self._ev("response.created", response=head),
                self._ev("response.in_progress", response=head),
            ]
        for d in deltas:
            if d.kind == "text":
                if self.open is None or self.open[0] != "message":
                    out += self._open_message(state)
                item_id = self.open[1]["id"]
                out.append(
                    self._ev(
                        "response.output_text.delta",
                        output_index=self.n,
                        item_id=item_id,
                        content_index=0,
                        delta=d.text,
                        logprobs=[],
                    )
                )
            elif d.kind == "call":
                out += self._close(state)
                self.n += 1
                call_id, name = state.call_head(d.index)
                if self.tools is None:
                    self.tools = self.dialect.tools(self.body)
                item = self.tools.item(call_id, name, "", done=False)
                self.open = ("call", d.index, item)
                out.append(self._ev("response.output_item.added", output_index=self.n, item=item))
            elif (
                self.open is not None
                and self.open[0] == "call"
                and self.open[1] == d.index
                and self.open[2]["type"] == "function_call"
            ):
                out.append(
                    self._ev(
                        "response.function_call_arguments.delta",
                        output_index=self.n,
                        item_id=self.open[2]["id"],
                        delta=d.text,
                    )
                )
        return out

    def finish(self, state: StreamState, reply: ChatReply) -> list[str]:
        out = [] if self.started else self.chunk(state, {}, [])
        if self.n < 0 and self.open is None:  # nothing said: the empty message the reply holds
            out += self._open_message(state)
        out += self._close(state)
        out.append(self._ev("response.completed", response=self.dialect.reply(reply, self.body)))
        return out

    def fail(self, status: int, message: str) -> list[str]:
        err = self.dialect.error(status, message)["error"]
        return [self._ev("error", code=err["type"], message=message, param=None, error=err)]


class GoogleWriter:
    """Google streamGenerateContent: a response per text piece; function calls (whole,
    as Google sends them) and the finish reason in the last."""

    def __init__(self, dialect: Any, body: dict[str, Any]) -> None:
        self.dialect = dialect

    def chunk(self, state: StreamState, raw: dict[str, Any], deltas: list[Delta]) -> list[str]:
        return [
            sse(self.dialect._response(_so_far(state), [{"text": d.text}], None))
            for d in deltas
            if d.kind == "text"
        ]

    def finish(self, state: StreamState, reply: ChatReply) -> list[str]:
        parts: list[dict[str, Any]] = [
            {"functionCall": {"id": c.id, "name": c.name, "args": c.args()}} for c in reply.tool_calls
        ] or [{"text": ""}]
        finish = self.dialect.finish(reply.finish_reason)
        return [sse(self.dialect._response(reply, parts, finish))]

    def fail(self, status: int, message: str) -> list[str]:
        return [sse(self.dialect.error(status, message))]

"""``LLMJudge``: a rubric that asks a chat model for the score.

    judge = LLMJudge(
        "Rate the answer from 0 to 10.\\nQuestion: {observation.prompt}\\nAnswer: {action.message}\\n"
        "Reply with <score>N</score>.",
        "openai:gpt-4o-mini",             # or an LLMClient, or "anthropic:MODEL"
        score_range=(0, 10),              # the reply's 7 scores 0.7 (normalize=True)
    )

The prompt is ``prompt_template.format(action=..., observation=...)``. The score rule
(``score``): ``"tag"`` (default) takes the last ``<score>N</score>`` in the reply;
``"number"`` the first number; any other string is a regex whose first group (or whole
match) is the number. A number outside ``score_range`` is a parse failure unless
``out_of_range`` is ``"clamp"`` or ``"keep"``; with ``normalize`` the range maps onto
[0, 1]. A reply the rule cannot read scores ``default_score`` and is recorded as a
parse failure, with the reply, in ``last_judgement`` and, when a rubric holding the
judge stamps an observation, in ``metadata["judge"][path]``: never a silent 0.

Replies are cached by a content hash (client settings + prompt), in memory and, with
``cache_dir``, as one JSON file each on disk; identical prompts in flight at once share
one request. At most ``concurrency`` requests are in flight (shared by every clone of
the judge); a transient error (no connection, timeout, 408/409/429, 5xx) is retried
``retries`` times with exponential backoff; a refused key (401/403) or any other error
raises ``JudgeError`` at once.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import re
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, ClassVar

from .._exceptions import JudgeError
from ._llm import LLMClient, chat_client, error_kind
from ._rubric import Rubric

_TAG = re.compile(r"<score>\s*(-?\d+(?:\.\d+)?)\s*</score>", re.IGNORECASE)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class Judgement:
    """One scoring: the reply, what it parsed to, and whether it came from the cache."""

    score: float
    reply: str
    parsed: bool
    raw: float | None
    cached: bool
    key: str
    error: str | None = None


class _Shared:
    """State every clone of one judge shares: the cache, and per event loop the
    concurrency bound and the requests in flight."""

    def __init__(self, concurrency: int) -> None:
        self.concurrency = concurrency
        self.cache: dict[str, str] = {}
        self.loops: weakref.WeakKeyDictionary[Any, tuple[asyncio.Semaphore, dict[str, asyncio.Future[str]]]]
        self.loops = weakref.WeakKeyDictionary()
        self.requests = 0  # requests sent (a cache hit sends none)
        self.in_flight = 0
        self.max_in_flight = 0

    def for_loop(self) -> tuple[asyncio.Semaphore, dict[str, asyncio.Future[str]]]:
        loop = asyncio.get_running_loop()
        state = self.loops.get(loop)
        if state is None:
            state = self.loops[loop] = (asyncio.Semaphore(self.concurrency), {})
        return state

    def __deepcopy__(self, memo: dict[int, Any]) -> _Shared:
        return self

    def __getstate__(self) -> dict[str, Any]:
        return {"concurrency": self.concurrency, "cache": self.cache}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["concurrency"])  # type: ignore[misc]
        self.cache.update(state["cache"])


class LLMJudge(Rubric):
    """A rubric scored by a chat model (see the module docstring for every rule)."""

    blocking = True
    state_fields: ClassVar[dict[str, str]] = {
        "prompt_template": "prompt_template",
        "score": "score_rule",
        "score_range": "score_range",
        "default_score": "default_score",
        "normalize": "normalize",
        "out_of_range": "out_of_range",
    }

    def __init__(
        self,
        prompt_template: str,
        client: LLMClient | str,
        *,
        score: str = "tag",
        score_range: tuple[float, float] = (0.0, 1.0),
        out_of_range: str = "fail",
        normalize: bool = True,
        default_score: float = 0.0,
        concurrency: int = 8,
        retries: int = 3,
        backoff_s: float = 0.5,
        cache: bool = True,
        cache_dir: str | os.PathLike[str] | None = None,
        name: str | None = None,
        **client_options: Any,
    ) -> None:
        super().__init__(name or "judge")
        if out_of_range not in ("fail", "clamp", "keep"):
            raise ValueError(f"out_of_range is fail, clamp or keep, not {out_of_range!r}")
        lo, hi = float(score_range[0]), float(score_range[1])
        if not lo < hi:
            raise ValueError(f"score_range {score_range!r} is not (low, high) with low < high")
        if concurrency < 1 or retries < 0:
            raise ValueError("concurrency must be >= 1 and retries >= 0")
        self.prompt_template = prompt_template
        self.client = chat_client(client, **client_options) if isinstance(client, str) else client
        self.score_rule = score
        self.score_range = (lo, hi)
        self.out_of_range, self.normalize = out_of_range, normalize
        self.default_score = float(default_score)
        self.retries, self.backoff_s = retries, backoff_s
        self.use_cache = cache
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self._shared = _Shared(concurrency)
        self.last_judgement: Judgement | None = None

    # --- the pieces, each overridable ---------------------------------------------

    def render_prompt(self, action: Any, observation: Any) -> str:
        try:
            return self.prompt_template.format(action=action, observation=observation)
        except (KeyError, AttributeError, IndexError) as exc:
            why = f"the judge's prompt template names {exc}, which the step does not have"
            raise JudgeError(why) from None

    def parse(self, reply: str) -> float | None:
        """The number the rule reads in ``reply`` (None: unreadable)."""
        if self.score_rule == "tag":
            found = _TAG.findall(reply)
            return float(found[-1]) if found else None
        pattern = _NUMBER if self.score_rule == "number" else re.compile(self.score_rule)
        match = pattern.search(reply)
        if match is None:
            return None
        try:
            return float(match.group(1) if match.lastindex else match.group(0))
        except ValueError:
            return None

    def to_score(self, raw: float) -> float | None:
        """``raw`` after the range rule and normalisation (None: out of range, a failure)."""
        lo, hi = self.score_range
        if not lo <= raw <= hi:
            if self.out_of_range == "fail":
                return None
            if self.out_of_range == "clamp":
                raw = min(max(raw, lo), hi)
        return (raw - lo) / (hi - lo) if self.normalize else raw

    # --- scoring --------------------------------------------------------------------

    async def forward(self, action: Any, observation: Any) -> float:  # type: ignore[override]
        prompt = self.render_prompt(action, observation)
        key = hashlib.sha256(json.dumps([_client_key(self.client), prompt]).encode()).hexdigest()
        reply, cached = await self._reply(key, prompt)
        raw = self.parse(reply)
        score = None if raw is None else self.to_score(raw)
        error = None
        if score is None:
            lo, hi = self.score_range
            error = "no score in the reply" if raw is None else f"{raw} is outside [{lo}, {hi}]"
        judgement = Judgement(
            score=self.default_score if score is None else score,
            reply=reply,
            parsed=score is not None,
            raw=raw,
            cached=cached,
            key=key,
            error=error,
        )
        self.last_judgement = judgement
        return judgement.score

    @property
    def requests_sent(self) -> int:
        """Requests this judge (and its clones) sent; a cache hit sends none."""
        return self._shared.requests

    @property
    def max_in_flight(self) -> int:
        """The most requests that were in flight at once."""
        return self._shared.max_in_flight

    async def aclose(self) -> None:
        """Close the client's connections on this event loop (when it has ``aclose``)."""
        close = getattr(self.client, "aclose", None)
        if callable(close):
            await close()

    def judgement_record(self) -> dict[str, Any] | None:
        """The last judgement as a dict (the reply included), or None."""
        return None if self.last_judgement is None else asdict(self.last_judgement)

    async def _reply(self, key: str, prompt: str) -> tuple[str, bool]:
        shared = self._shared
        if self.use_cache:
            hit = shared.cache.get(key) or self._read_disk(key)
            if hit is not None:
                shared.cache[key] = hit
                return hit, True
        sem, in_flight = shared.for_loop()
        if self.use_cache and key in in_flight:
            return await asyncio.shield(in_flight[key]), True
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        in_flight[key] = future
        try:
            async with sem:
                reply = await self._ask(prompt)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # retrieved: no "never retrieved" warning when nobody waits
            raise
        finally:
            in_flight.pop(key, None)
        future.set_result(reply)
        if self.use_cache:
            shared.cache[key] = reply
            self._write_disk(key, reply)
        return reply, False

    async def _ask(self, prompt: str) -> str:
        shared = self._shared
        for attempt in range(self.retries + 1):
            shared.requests += 1
            shared.in_flight += 1
            shared.max_in_flight = max(shared.max_in_flight, shared.in_flight)
            try:
                return str(await self.client.complete(prompt))
            except Exception as exc:
                kind = error_kind(exc)
                if kind == "auth":
                    raise JudgeError(f"the judge model refused the key: {_short(exc)}") from None
                if kind == "fatal":
                    raise JudgeError(f"the judge model failed: {type(exc).__name__}: {_short(exc)}") from None
                if attempt == self.retries:
                    raise JudgeError(
                        f"the judge model kept failing ({self.retries + 1} tries): {_short(exc)}"
                    ) from None
            finally:
                shared.in_flight -= 1
            await asyncio.sleep(self.backoff_s * 2**attempt)
        raise AssertionError("unreachable")  # pragma: no cover

    def _read_disk(self, key: str) -> str | None:
        if self.cache_dir is None:
            return None
        path = self.cache_dir / f"{key}.json"
        try:
            return str(json.loads(path.read_text())["reply"])
        except (OSError, ValueError, KeyError):
            return None

    def _write_disk(self, key: str, reply: str) -> None:
        if self.cache_dir is None:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = self.cache_dir / f".{key}.{os.getpid()}.tmp"
        tmp.write_text(json.dumps({"reply": reply}))
        os.replace(tmp, self.cache_dir / f"{key}.json")


#: The template ``judge_from_spec`` uses when the spec names no ``prompt``.
DEFAULT_PROMPT = (
    "You grade one step of an agent in an environment.\n"
    "The agent's action: {action}\n"
    "What the environment answered: {observation}\n"
    "How good was the action, from 0 (useless) to 1 (perfect)? Think briefly, then end your "
    "reply with the score as <score>N</score>."
)
_SPEC_NUMBERS: dict[str, Any] = {
    "default": ("default_score", float),
    "concurrency": ("concurrency", int),
    "retries": ("retries", int),
    "backoff_s": ("backoff_s", float),
    "temperature": ("temperature", float),
    "max_tokens": ("max_tokens", int),
    "timeout_s": ("timeout_s", float),
}
_SPEC_TEXT = {
    "score": "score",
    "base_url": "base_url",
    "api_key_env": "api_key_env",
    "cache_dir": "cache_dir",
    "system": "system_prompt",
    "out_of_range": "out_of_range",
}


def judge_from_spec(spec: str) -> LLMJudge:
    """``PROVIDER:MODEL[?prompt=TEXT|@FILE&range=LO,HI&score=tag|number|REGEX&default=X&
    base_url=URL&api_key_env=VAR&system=TEXT&temperature=T&max_tokens=N&concurrency=N&
    retries=N&cache_dir=DIR]`` (what ``openenv eval rescore --rubric judge:...`` takes)."""
    from urllib.parse import parse_qsl

    head, _, query = spec.partition("?")
    options: dict[str, Any] = {}
    prompt = DEFAULT_PROMPT
    for key, value in parse_qsl(query, keep_blank_values=True):
        try:
            if key == "prompt":
                prompt = Path(value[1:]).read_text() if value.startswith("@") else value
            elif key == "range":
                lo, hi = value.split(",")
                options["score_range"] = (float(lo), float(hi))
            elif key in ("normalize", "cache"):
                options[key] = value not in ("0", "false", "no")
            elif key in _SPEC_NUMBERS:
                name, kind = _SPEC_NUMBERS[key]
                options[name] = kind(value)
            elif key in _SPEC_TEXT:
                options[_SPEC_TEXT[key]] = value
            else:
                raise ValueError(f"unknown option {key!r}")
        except OSError as exc:
            raise ValueError(f"judge prompt file {value[1:]!r}: {exc.strerror}") from None
        except ValueError as exc:
            raise ValueError(f"judge option {key}={value!r}: {exc}") from None
    return LLMJudge(prompt, head, **options)


def _client_key(client: Any) -> str:
    key = getattr(client, "cache_key", None)
    return str(key()) if callable(key) else f"{type(client).__module__}.{type(client).__qualname__}"


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0][:300] if text else type(exc).__name__

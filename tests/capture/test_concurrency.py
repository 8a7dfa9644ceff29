"""Many rollouts at once through one proxy: each session gets exactly its own calls, each
conversation one path, whatever the interleaving."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from openenv.capture import CaptureServer

from .conftest import new_session

openai = pytest.importorskip("openai")
pytestmark = pytest.mark.timeout(120)


def test_concurrent_multi_turn_sessions_stay_apart(proxy: CaptureServer) -> None:
    sessions = [new_session(proxy) for _ in range(16)]

    async def rollout(i: int) -> None:
        client = openai.AsyncOpenAI(base_url=proxy.url + "/v1", api_key=sessions[i].session_id, max_retries=0)
        messages = [{"role": "user", "content": f"rollout {i}"}]
        for turn in range(3):
            reply = await client.chat.completions.create(model="m", messages=messages)
            messages += [
                {"role": "assistant", "content": reply.choices[0].message.content or ""},
                {"role": "user", "content": f"rollout {i} turn {turn}"},
            ]
        await client.close()

    async def main() -> None:
        await asyncio.gather(*(rollout(i) for i in range(16)))

    asyncio.run(main())
    for i, session in enumerate(sessions):
        stats = session.graph.stats()
        assert stats["n_turns"] == 3
        assert stats["n_roots"] == 1
        assert stats["n_leaves"] == 1
        first = session.graph.nodes()[0].request_messages[0]["content"]
        assert first == f"rollout {i}"


@pytest.mark.slow  # about 20 s on a loaded 2-core machine
def test_512_concurrent_sessions_drop_nothing(proxy: CaptureServer) -> None:
    """512 rollouts in flight at once, half of them streamed: every call answered 200 with
    its own reply, every session recorded with exactly its two turns as one path."""
    n = 512

    async def main() -> list[list[str]]:
        limits = httpx.Limits(max_connections=n, max_keepalive_connections=n)
        async with httpx.AsyncClient(base_url=proxy.url, limits=limits, timeout=120) as client:
            made = await asyncio.gather(*(client.post("/sessions", json={}) for _ in range(n)))
            keys = [r.json()["session_id"] for r in made]

            async def call(i: int, messages: list[dict[str, str]]) -> str:
                body: dict[str, object] = {"model": "m", "messages": messages, "stream": i % 2 == 1}
                headers = {"authorization": f"Bearer {keys[i]}"}
                if i % 2 == 0:
                    reply = await client.post("/v1/chat/completions", json=body, headers=headers)
                    assert reply.status_code == 200, reply.text
                    return str(reply.json()["choices"][0]["message"]["content"])
                text, done = [], False
                async with client.stream("POST", "/v1/chat/completions", json=body, headers=headers) as reply:
                    assert reply.status_code == 200
                    async for line in reply.aiter_lines():
                        if line.startswith("data: {"):
                            chunk = json.loads(line[6:])
                            assert "error" not in chunk, chunk
                            text += [c["delta"].get("content") or "" for c in chunk["choices"]]
                        done = done or line == "data: [DONE]"
                    assert done
                return "".join(text)

            async def rollout(i: int) -> list[str]:
                messages = [{"role": "user", "content": f"rollout {i}"}]
                first = await call(i, messages)
                messages += [
                    {"role": "assistant", "content": first},
                    {"role": "user", "content": f"more {i}"},
                ]
                return [first, await call(i, messages)]

            replies = await asyncio.gather(*(rollout(i) for i in range(n)))
            return [keys, *replies]

    keys, *replies = asyncio.run(main())
    for i, (key, got) in enumerate(zip(keys, replies, strict=True)):
        assert got == [f"reply to: rollout {i}", f"reply to: more {i}"]
        session = proxy.registry.get(key)
        assert session is not None
        stats = session.graph.stats()
        assert (stats["n_turns"], stats["n_roots"], stats["n_leaves"]) == (2, 1, 1), (i, stats)
        assert session.upstream_errors == 0
        assert not session.incomplete

"""Many rollouts at once through one proxy: each session gets exactly its own calls, each
conversation one path, whatever the interleaving."""

from __future__ import annotations

import asyncio

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

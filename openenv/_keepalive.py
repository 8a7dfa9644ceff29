"""How long our HTTP servers keep an idle keep-alive connection open.

A client reuses a pooled connection until its own idle expiry (httpx, and the OpenAI and
Anthropic SDKs over it, expire after 5 s). uvicorn's default closes an idle connection
after 5 s too, so a request sent on a connection at that moment meets a close it cannot
retry (a POST is not replayed): the client sees a read error, the server a disconnect.
Servers outliving their clients' expiry by a wide margin leaves the client to close first.
"""

from __future__ import annotations

__all__ = ["SERVER_KEEP_ALIVE_S"]

SERVER_KEEP_ALIVE_S = 65

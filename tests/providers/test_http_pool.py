"""A provider's connections (providers/http.py): spread over several small pools, kept open
between calls, one TLS context for them all, closed with the provider."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from core.messages import ChatMessage, LlmRequest, SystemPrompt
from providers.http import POOL_SHARDS, SHARD_CONNECTIONS
from providers.openai import OpenAIProvider

REPLY = json.dumps({
    "id": "x", "object": "chat.completion", "model": "m",
    "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 1},
}).encode()


class Server(ThreadingHTTPServer):
    request_queue_size = 256
    daemon_threads = True
    connections: set[int]
    lock: threading.Lock


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: Server

    def log_message(self, *args: Any) -> None:
        pass

    def do_POST(self) -> None:  # noqa: N802
        self.rfile.read(int(self.headers["Content-Length"]))
        with self.server.lock:
            self.server.connections.add(self.client_address[1])
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(REPLY)))
        self.end_headers()
        self.wfile.write(REPLY)


@pytest.fixture
def server() -> Iterator[Server]:
    server = Server(("127.0.0.1", 0), Handler)
    server.connections, server.lock = set(), threading.Lock()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


REQUEST = LlmRequest(model="m", system=SystemPrompt(stable="be brief"),
                     messages=[ChatMessage(role="user", content="hi")], tools=[], stream=False)


async def test_calls_in_flight_share_a_few_small_pools_and_keep_their_connections(server: Server) -> None:
    provider = OpenAIProvider(f"http://127.0.0.1:{server.server_address[1]}/v1", "k")
    in_flight = 3 * POOL_SHARDS  # a whole number per pool: each round puts 3 calls on each
    try:
        for _ in range(3):
            results = await asyncio.gather(*(provider.complete(REQUEST) for _ in range(in_flight)))
            assert all(r.content == "ok" for r in results)
        pools = [c for c in provider._shards if c is not None]
        # Spread over every pool, none over its size; and the 3 rounds reused the connections
        # the first round opened (a pool that kept too few idle ones would reconnect every round).
        assert len(pools) == POOL_SHARDS
        assert in_flight <= POOL_SHARDS * SHARD_CONNECTIONS
        assert len(server.connections) <= in_flight, len(server.connections)
        # one TLS context for all the pools, not a CA bundle load for each
        assert len({id(c._transport._pool._ssl_context) for c in pools}) == 1  # type: ignore[attr-defined]
    finally:
        await provider.aclose()
    assert all(c.is_closed for c in provider._shards if c is not None)


async def test_a_client_passed_in_is_the_only_pool_and_stays_the_callers(server: Server) -> None:
    import httpx

    async with httpx.AsyncClient() as client:
        provider = OpenAIProvider(f"http://127.0.0.1:{server.server_address[1]}/v1", "k", client=client)
        await asyncio.gather(*(provider.complete(REQUEST) for _ in range(5)))
        assert provider._shards == [client]
        await provider.aclose()
        assert not client.is_closed

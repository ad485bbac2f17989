"""CPU per model call with many calls in flight: one connection pool against the provider's
several small ones (providers/http.py, ``HttpProvider._client``), on httpx's own network
layer (anyio) and on the provider's (asyncio streams, providers/netio.py).

    python -m benchmarks.http_pool [--in-flight 50] [--calls 2000]

A local OpenAI-compatible server (the lean-turns benchmark's, in a process of its own)
answers each call at once with a tool call. ``OpenAIProvider.complete`` sends ``--calls``
requests of about 25 KB (a 15 KB system prompt and five 2 KB messages), ``--in-flight``
at a time: over one httpx client with a pool of 100 connections (what the provider used
first), over the provider's number of small pools built as httpx builds them, and over the
provider's own pools. Prints the CPU this process spent per call (the server's is not
counted).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import time

import httpx

from benchmarks.common import start_model
from benchmarks.lean_turns import ReadsPerTask
from core.messages import ChatMessage, LlmRequest, SystemPrompt
from providers.http import POOL_SHARDS, SHARD_CONNECTIONS
from providers.openai import OpenAIProvider


def _cpu() -> float:
    times = os.times()
    return times.user + times.system


def _request() -> LlmRequest:
    messages = [ChatMessage(role="user", content="read the files, turns=1000000000 task=pool")]
    for _ in range(5):
        messages += [ChatMessage(role="assistant", content="reading"), ChatMessage(role="user", content="y" * 2048)]
    return LlmRequest(model="bench", system=SystemPrompt(stable="x" * 15_000), messages=messages, tools=[], stream=False)


async def _measure(provider: OpenAIProvider, in_flight: int, calls: int) -> float:
    request = _request()
    await asyncio.gather(*(provider.complete(request) for _ in range(in_flight)))  # connections opened
    started = _cpu()
    for _ in range(max(1, calls // in_flight)):
        await asyncio.gather(*(provider.complete(request) for _ in range(in_flight)))
    return (_cpu() - started) / (max(1, calls // in_flight) * in_flight) * 1000


async def main(in_flight: int, calls: int) -> None:
    server, url = await start_model(ReadsPerTask(1))
    try:
        one = httpx.AsyncClient(timeout=600, limits=httpx.Limits(max_connections=100, max_keepalive_connections=100))
        single = OpenAIProvider(url, "bench", client=one)
        anyio_pools = OpenAIProvider(url, "bench")
        limits = httpx.Limits(max_connections=SHARD_CONNECTIONS, max_keepalive_connections=SHARD_CONNECTIONS)
        anyio_pools._shards = [httpx.AsyncClient(timeout=600, limits=limits) for _ in range(POOL_SHARDS)]
        sharded = OpenAIProvider(url, "bench")
        labels = ("one pool of 100", f"{POOL_SHARDS} pools of {SHARD_CONNECTIONS}, anyio", "the provider's pools")
        figures = {}
        for label, provider in zip(labels, (single, anyio_pools, sharded), strict=True):
            wall = time.perf_counter()
            figures[label] = await _measure(provider, in_flight, calls)
            figures[label + " wall"] = (time.perf_counter() - wall) * 1000 / calls
            await provider.aclose()
        await one.aclose()
    finally:
        server.terminate()
    print(f"http pools: {calls} model calls, {in_flight} in flight, about 25 KB each, to a local server")
    for label in labels:
        print(f"  {label:<24} {figures[label]:5.2f} ms CPU per call   ({figures[label + ' wall']:.2f} ms wall per call)")
    ratio = figures[labels[0]] / figures[labels[-1]]
    print(f"  ratio (first / last)     {ratio:.1f}x")


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--in-flight", type=int, default=50)
    parser.add_argument("--calls", type=int, default=2000)
    opts = parser.parse_args()
    asyncio.run(main(opts.in_flight, opts.calls))

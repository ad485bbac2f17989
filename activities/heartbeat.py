"""Keep an activity heartbeating while it awaits something slow.

Heartbeats are how Temporal notices a dead worker (the heartbeat timeout
expires and the activity is retried elsewhere) and how a cancellation from
the workflow reaches a running activity.
"""

from __future__ import annotations

import asyncio
from typing import Awaitable, Callable, TypeVar

from temporalio import activity

T = TypeVar("T")
HEARTBEAT_EVERY_S = 1.0  # the worker sends them at most once a second


async def with_heartbeats(
    work: Awaitable[T],
    *,
    every_s: float = HEARTBEAT_EVERY_S,
    detail: Callable[[], str] = lambda: "",
) -> T:
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_s)
            if done:
                return task.result()
            activity.heartbeat(detail())
    except BaseException:
        task.cancel()
        raise

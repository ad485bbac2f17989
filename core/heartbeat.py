"""Keep beating while awaiting something slow: one helper for activities and tools.

Heartbeats are how Temporal notices a dead worker (the heartbeat timeout
expires and the activity is retried elsewhere) and how a cancellation from
the workflow reaches a running activity. The beat itself is passed in
(``activity.heartbeat`` in an activity, ``ToolContext.heartbeat`` in a tool), so
this module knows nothing of Temporal.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from typing import TypeVar

T = TypeVar("T")
HEARTBEAT_EVERY_S = 1.0  # the worker sends them at most once a second


async def with_heartbeats(
    work: Awaitable[T],
    beat: Callable[[str], None],
    *,
    every_s: float = HEARTBEAT_EVERY_S,
    detail: Callable[[float], str] = lambda _waited_s: "",
) -> T:
    """Await ``work``, calling ``beat(detail(seconds waited))`` every ``every_s`` until it is
    done. If the wait is cancelled or a beat fails, ``work`` is cancelled and awaited, so a
    request closes its connection before the error goes on."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    task = asyncio.ensure_future(work)
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=every_s)
            if done:
                return task.result()
            beat(detail(loop.time() - started))
    except BaseException:
        task.cancel()
        await asyncio.wait({task})
        raise

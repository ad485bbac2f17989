"""The project's worker, except that on a tool call's first attempt it dies right after the
tool activity has written the result entry to the context store and before the activity
completes: the crash window the store's idempotent writes exist for.

Run as ``python -m tests.workflows.faulty_worker`` from the project root.
"""

from __future__ import annotations

import asyncio
import os
import sys

from temporalio import activity

import worker
from activities.tools import ToolActivities

_store_result = ToolActivities._store_result


async def _die_after_store(self, inp, key, result):  # type: ignore[no-untyped-def]
    stored = await _store_result(self, inp, key, result)
    if activity.info().attempt == 1:
        os._exit(99)
    return stored


ToolActivities._store_result = _die_after_store  # type: ignore[method-assign]

if __name__ == "__main__":
    sys.exit(asyncio.run(worker.main()))

"""What the adapter tests share: a ``channels.toml`` table as the gateway loads it (typed,
extras and all), a ``deliver`` that records, and waiting for a condition."""

from __future__ import annotations

import asyncio
from typing import Any

from channels.config import ChannelConfig
from contracts.channels import InboundMessage


def table(**keys: Any) -> ChannelConfig:
    return ChannelConfig.model_validate(keys)


class Inbox:
    """A deliver that records, and fails on purpose the first ``fail`` times."""

    def __init__(self, fail: int = 0) -> None:
        self.fail, self.attempts, self.messages = fail, 0, []
        self.arrived = asyncio.Event()

    async def __call__(self, message: InboundMessage) -> None:
        self.attempts += 1
        if self.fail:
            self.fail -= 1
            raise RuntimeError("Temporal is away")
        self.messages.append(message)
        self.arrived.set()

    async def next(self) -> InboundMessage:
        await asyncio.wait_for(self.arrived.wait(), 10)
        self.arrived.clear()
        return self.messages[-1]


async def until(condition) -> None:
    async with asyncio.timeout(10):
        while not condition():
            await asyncio.sleep(0.02)

"""Outbound chat messages: the ``deliver`` activity posts an ``OutboundMessage`` through its
channel's adapter, on the gateway that runs the adapters (its own task queue).

Exactly once where the platform allows it: the message's ``key`` is stable across retries and
is the platform's transaction id (Matrix) or idempotency key (webhooks), so a retried activity
posts once. A 429 becomes a retryable error whose ``next_retry_delay`` is what the platform asked
for, so Temporal waits it out; a channel this gateway does not run is a non-retryable error.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from channels.base import Adapter, RateLimited
from contracts.channels import DELIVER_ACTIVITY, Delivered, OutboundMessage


class DeliverActivities:
    def __init__(self, adapters: dict[str, Adapter]) -> None:
        self.adapters = adapters

    @activity.defn(name=DELIVER_ACTIVITY)
    async def deliver(self, message: OutboundMessage) -> Delivered:
        adapter = self.adapters.get(message.chat.channel)
        if adapter is None:
            raise ApplicationError(f"no channel {message.chat.channel!r} on this gateway", type="unknown_channel",
                                   non_retryable=True)
        try:
            return await adapter.send(message)
        except RateLimited as err:
            raise ApplicationError(str(err), type="rate_limited",
                                   next_retry_delay=timedelta(seconds=max(err.retry_after_s, 0.1))) from None

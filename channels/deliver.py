"""The gateway's activities, run on its own task queue, each through a channel's adapter: the
``deliver`` activity posts an ``OutboundMessage``; ``fetch_attachments`` brings the bytes of the
files a message named but did not carry (Slack hands a message over before fetching them, to
answer its event within 3 s), with the channel's token, which only the gateway holds.

Exactly once where the platform allows it: the message's ``key`` is stable across retries and
is the platform's transaction id (Matrix) or idempotency key (webhooks), so a retried activity
posts once. A 429 becomes a retryable error whose ``next_retry_delay`` is what the platform asked
for, so Temporal waits it out; a channel this gateway does not run is a non-retryable error.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity
from temporalio.exceptions import ApplicationError

from channels.base import Adapter, FetchesLater, RateLimited, within_limit
from contracts.attachments import FETCH_ATTACHMENTS_ACTIVITY, Attachment, FetchAttachments
from contracts.channels import DELIVER_ACTIVITY, Delivered, OutboundMessage


class DeliverActivities:
    def __init__(self, adapters: dict[str, Adapter]) -> None:
        self.adapters = adapters

    @activity.defn(name=DELIVER_ACTIVITY)
    async def deliver(self, message: OutboundMessage) -> Delivered:
        adapter = self._adapter(message.chat.channel)
        try:
            return await adapter.send(message)
        except RateLimited as err:
            raise ApplicationError(str(err), type="rate_limited",
                                   next_retry_delay=timedelta(seconds=max(err.retry_after_s, 0.1))) from None

    @activity.defn(name=FETCH_ATTACHMENTS_ACTIVITY)
    async def fetch_attachments(self, request: FetchAttachments) -> list[Attachment]:
        """The attachments with the bytes of those still to fetch, as many as one message carries."""
        adapter = self._adapter(request.channel)
        if not isinstance(adapter, FetchesLater):
            raise ApplicationError(f"channel {request.channel!r} does not fetch files later", type="unknown_channel",
                                   non_retryable=True)
        return within_limit([await adapter.fetched(a) if a.file_id else a for a in request.attachments])

    def _adapter(self, channel: str) -> Adapter:
        adapter = self.adapters.get(channel)
        if adapter is None:
            raise ApplicationError(f"no channel {channel!r} on this gateway", type="unknown_channel", non_retryable=True)
        return adapter

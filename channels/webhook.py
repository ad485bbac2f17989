"""Webhooks, for anything without an adapter of its own: a signed inbound endpoint and a signed
outbound callback.

Both ways the body is signed with the table's ``secret`` (HMAC-SHA256 over
``"<timestamp>.<body>"``, hex, in ``X-Agent-Signature: sha256=...``, the Unix time in
``X-Agent-Timestamp``); a request older than ``TOLERANCE_S`` or with a bad signature is refused,
so a captured request cannot be replayed later. Inbound ``POST /`` (JSON: ``id``,
``conversation``, ``author``, ``text``, optional ``thread``, ``reaction``, ``reply_to``) is
answered 202 only once Temporal has the message: a caller that got no 202 sends it again, and
the conversation handles an ``id`` once. Outbound messages are POSTed to ``callback_url`` as
JSON with ``Idempotency-Key: <message key>``, the same on every retry; a 429's
``Retry-After`` is waited out by Temporal's retries.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Mapping

import httpx
import structlog
from aiohttp import web
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from channels.base import Deliver, RateLimited
from channels.config import NOT_ALLOWED, ChannelConfig
from channels.console import dropped
from channels.listen import Endpoint
from contracts.channels import ChatRef, Delivered, InboundMessage, OutboundMessage

TOLERANCE_S = 300
SIGNATURE_HEADER = "X-Agent-Signature"
TIMESTAMP_HEADER = "X-Agent-Timestamp"

_log = structlog.get_logger(__name__)


class WebhookEvent(BaseModel):
    id: str
    conversation: str
    author: str
    text: str = ""
    thread: str | None = None
    reaction: str | None = None
    reply_to: str | None = None


def sign(secret: str, timestamp: str, body: bytes) -> str:
    digest = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    return f"sha256={digest}"


def signed_headers(secret: str, body: bytes, now: float | None = None) -> dict[str, str]:
    timestamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: sign(secret, timestamp, body),
            "Content-Type": "application/json"}


def signature_problem(secret: str, headers: Mapping[str, str], body: bytes, now: float | None = None) -> str | None:
    """Why a request's signature is refused, or None."""
    timestamp, signature = headers.get(TIMESTAMP_HEADER) or "", headers.get(SIGNATURE_HEADER) or ""
    if not timestamp.isdigit():
        return f"no {TIMESTAMP_HEADER}"
    if abs((time.time() if now is None else now) - int(timestamp)) > TOLERANCE_S:
        return "stale timestamp"
    if not hmac.compare_digest(signature, sign(secret, timestamp, body)):
        return "bad signature"
    return None


class WebhookSettings(BaseModel):
    """The ``[webhook]`` table's own keys (``allowed_users``: channels/config.py); a key it
    does not know is a typo, refused when the gateway starts."""

    model_config = ConfigDict(extra="forbid")

    secret: str = Field(min_length=1)  # signs both ways
    host: str = "127.0.0.1"
    port: int = Field(8787, ge=1, le=65535)
    callback_url: str | None = None  # where replies are POSTed; None: no replies


class WebhookAdapter:
    def __init__(self, config: ChannelConfig) -> None:
        self.name = config.name
        self.config = config
        settings = config.settings(WebhookSettings)
        self.secret, self.host, self.port = settings.secret, settings.host, settings.port
        self.callback_url = settings.callback_url
        self.http = httpx.AsyncClient(timeout=30)
        self.endpoint = Endpoint(self.host, self.port, "/")  # the gateway's one HTTP server stack (aiohttp)

    async def receive(self, deliver: Deliver) -> None:
        async def inbound(request: web.Request) -> web.Response:
            body = await request.read()
            problem = signature_problem(self.secret, request.headers, body)
            if problem:
                _log.warning("refused a webhook call", channel=self.name, problem=problem)
                return web.json_response({"error": problem}, status=401)
            try:
                event = WebhookEvent.model_validate_json(body)
            except ValidationError as err:
                return web.json_response({"error": err.errors()[0]["msg"]}, status=400)
            chat = ChatRef(channel=self.name, conversation=event.conversation, thread=event.thread)
            message = InboundMessage(event_id=event.id, chat=chat, author=event.author, text=event.text,
                                     reaction=event.reaction, reply_to=event.reply_to)
            if not self.config.allows(event.author):
                dropped(message, NOT_ALLOWED.why)
                return web.json_response({"error": f"{event.author} may not talk to the agent"}, status=403)
            await deliver(message)
            return web.json_response({"accepted": event.id}, status=202)  # Temporal has it

        await self.endpoint.serve(inbound)  # until cancelled

    async def send(self, message: OutboundMessage) -> Delivered:
        if not self.callback_url:
            raise RuntimeError(f"channel [{self.name}] has no callback_url to send to")
        body = json.dumps(message.model_dump(mode="json"), ensure_ascii=False).encode()
        headers = {**signed_headers(self.secret, body), "Idempotency-Key": message.key}
        response = await self.http.post(self.callback_url, content=body, headers=headers)
        if response.status_code == 429:
            raise RateLimited(float(response.headers.get("Retry-After", "1") or 1))
        response.raise_for_status()
        try:
            answer = response.json()
        except ValueError:
            answer = {}
        return Delivered(message_ids=[str(answer.get("id") or message.key) if isinstance(answer, dict) else message.key])

    async def close(self) -> None:
        await self.http.aclose()


def adapter(config: ChannelConfig, state_dir: object) -> WebhookAdapter:
    """The gateway's way in (every channel module has one); a webhook keeps no position."""
    return WebhookAdapter(config)

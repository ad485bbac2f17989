"""Slack, on ``slack_sdk`` (issue 31): messages in channels and DMs in, answers and Block Kit
approval buttons out.

Inbound comes one of two ways, chosen by ``mode``: the Events API over HTTP (every request's
``X-Slack-Signature`` checked with the signing secret, older than 5 minutes refused, the
``url_verification`` challenge answered) or Socket Mode (slack_sdk's aiohttp client on the
app token). Either way the event is acknowledged only after ``deliver`` returns: an HTTP 200,
or the envelope's ack on the socket. Slack sends an event again when it is not acknowledged
within 3 s, and disables a subscription that keeps failing, so nothing slow stands before
``deliver`` (a file is handed over by its id; ``fetched`` brings its bytes later, when the
conversation asks the gateway for them) and a deliver that takes longer than
``ACK_BUDGET_S`` is given up. A deliver that fails or is given up leaves the event
unacknowledged, and Slack sends it again (``X-Slack-Retry-Num``, ``retry_attempt``); the
conversation drops the repeat by ``event_id`` (Slack's event id, or the button's ``action_ts``).

A thread is a conversation: a message in a channel starts one (its ``ts`` becomes the
thread, and the agent answers in it); in a DM the top level is one conversation and each
thread another; a leading mention of the bot is dropped from the text. Bots are ignored
(``bot_id``, subtype ``bot_message``, our own user), and so are edits, joins and other
subtypes. Files come as attachments, their bytes fetched later from the private URL with the
bot token (up to ``ATTACHMENT_BYTES``; larger ones by name and size).

Outbound: Slack cuts ``text`` at 40,000 characters and a section block at 3,000, so an answer
is split at 3,000 and each piece is one message (a section block, the text as fallback); the
buttons ride on the last. Progress edits in place with chat.update. What was posted is recorded
by message key (channels/posted.py), so a retried delivery posts only what is missing. A 429 is raised as
``RateLimited`` with its ``Retry-After``; the client never retries by itself.
"""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import urllib.parse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import aiohttp
import structlog
from aiohttp import web
from pydantic import BaseModel, ConfigDict
from slack_sdk.errors import SlackApiError
from slack_sdk.signature import SignatureVerifier
from slack_sdk.socket_mode.aiohttp import SocketModeClient
from slack_sdk.socket_mode.request import SocketModeRequest
from slack_sdk.socket_mode.response import SocketModeResponse
from slack_sdk.web.async_client import AsyncWebClient

from channels.base import ATTACHMENT_BYTES, Deliver, RateLimited, split_text
from channels.config import ChannelConfig
from channels.console import dropped
from channels.listen import Endpoint
from channels.posted import PostedRecord, record_path
from contracts.attachments import Attachment
from contracts.channels import ChatRef, Delivered, InboundMessage, OutboundMessage

ACK_BUDGET_S = 2.0  # to hand an event over; Slack waits 3 s for the answer
SECTION_LIMIT = 3000  # characters in a section block's text; a message's text stops at 40,000
_KEPT_SUBTYPES = {None, "file_share", "thread_broadcast"}  # a person's own words; edits, joins etc. are not
_STYLES = {"approve": "primary", "deny": "danger"}

_log = structlog.get_logger(__name__)


class SlackSettings(BaseModel):
    """The ``[slack]`` table's own keys (``allowed_users``, ``approvers``: channels/config.py)."""

    model_config = ConfigDict(extra="forbid")

    bot_token: str  # xoxb-…: posts and edits
    mode: Literal["events", "socket"] = "events"
    signing_secret: str = ""  # Events API: checks every request
    app_token: str = ""  # Socket Mode: xapp-… with connections:write
    host: str = "127.0.0.1"  # where the Events API endpoint listens (behind your HTTPS proxy)
    port: int = 3000
    path: str = "/slack/events"  # the Request URL of both Event Subscriptions and Interactivity
    api_url: str = "https://slack.com/api/"


def adapter(config: ChannelConfig, state_dir: Path) -> SlackAdapter:
    """The gateway's way in (every channel module has one)."""
    return SlackAdapter(config, state_dir)


class SlackAdapter:
    def __init__(self, config: ChannelConfig, state_dir: Path | None = None) -> None:
        settings = config.settings(SlackSettings)
        if settings.mode == "events" and not settings.signing_secret:
            raise ValueError(f"channel [{config.name}]: the Events API needs signing_secret")
        if settings.mode == "socket" and not settings.app_token:
            raise ValueError(f"channel [{config.name}]: Socket Mode needs app_token")
        self.name = config.name
        self.config, self.settings = config, settings
        self.web = AsyncWebClient(token=settings.bot_token, base_url=settings.api_url, retry_handlers=[])
        self.endpoint = Endpoint(settings.host, settings.port, settings.path)
        self.posted = PostedRecord(record_path(state_dir, config.name))
        self.connected = asyncio.Event()  # Socket Mode: the socket is open
        self._me = ""

    # --- inbound -----------------------------------------------------------------------------

    async def receive(self, deliver: Deliver) -> None:
        self._me = str((await self.web.auth_test())["user_id"])
        if self.settings.mode == "socket":
            await self._socket_mode(deliver)
        else:
            verifier = SignatureVerifier(self.settings.signing_secret)
            await self.endpoint.serve(functools.partial(self._on_request, verifier=verifier, deliver=deliver))

    async def _on_request(self, request: web.Request, verifier: SignatureVerifier, deliver: Deliver) -> web.Response:
        body = await request.read()
        timestamp = request.headers.get("X-Slack-Request-Timestamp", "")
        if not timestamp.isdigit() or not verifier.is_valid(body, timestamp, request.headers.get("X-Slack-Signature")):
            _log.warning("slack request refused: bad or stale signature", timestamp=timestamp)
            return web.Response(status=401, text="invalid signature")
        if request.content_type == "application/x-www-form-urlencoded":
            payload = json.loads(urllib.parse.parse_qs(body.decode())["payload"][0])
        else:
            payload = json.loads(body)
        if payload.get("type") == "url_verification":
            return web.json_response({"challenge": payload.get("challenge", "")})
        if not await self._handed_over(payload, deliver, retry=request.headers.get("X-Slack-Retry-Num", "0")):
            return web.Response(status=500, text="not delivered")
        return web.Response(status=200)

    async def _socket_mode(self, deliver: Deliver) -> None:
        socket_web = AsyncWebClient(base_url=self.settings.api_url, retry_handlers=[])
        client = SocketModeClient(app_token=self.settings.app_token, web_client=socket_web)

        async def on_request(client: Any, request: SocketModeRequest) -> None:
            if await self._handed_over(request.payload, deliver, retry=request.retry_attempt):
                await client.send_socket_mode_response(SocketModeResponse(envelope_id=request.envelope_id))

        client.socket_mode_request_listeners.append(on_request)
        try:
            await client.connect()
            self.connected.set()
            await asyncio.Event().wait()
        finally:
            await client.close()

    async def _handed_over(self, payload: dict[str, Any], deliver: Deliver, retry: object) -> bool:
        """Whether the event went to ``deliver`` within ``ACK_BUDGET_S``, so it may be
        acknowledged; if not, Slack sends it again."""
        try:
            async with asyncio.timeout(ACK_BUDGET_S):
                await self._handle(payload, deliver)
            return True
        except TimeoutError:
            _log.warning("slack event not handed over in time; Slack will send it again", retry=retry,
                         budget_s=ACK_BUDGET_S)
        except Exception:
            _log.exception("slack event not delivered; Slack will send it again", retry=retry)
        return False

    async def _handle(self, payload: dict[str, Any], deliver: Deliver) -> None:
        if payload.get("type") == "block_actions":
            message = self._action(payload)
        elif payload.get("type") == "event_callback":
            message = self._message(payload)
        else:
            return
        if message is None:
            return
        refusal = self.config.refusal(message.author, message.reaction)
        if refusal:
            dropped(message, refusal.why)
            if message.reaction:  # a button: say so, to that person only
                await self._call(self.web.chat_postEphemeral, channel=message.chat.conversation,
                                 user=message.author, text=refusal.told, thread_ts=message.chat.thread)
            return
        await deliver(message)

    async def fetched(self, attachment: Attachment) -> Attachment:
        """The file's bytes from its private URL (the bot token opens it), when small enough
        (``FetchesLater``: the conversation asks for them once the event is acknowledged)."""
        attachment = attachment.model_copy(update={"file_id": None})
        if not attachment.url or attachment.size > ATTACHMENT_BYTES:
            return attachment
        headers = {"Authorization": f"Bearer {self.settings.bot_token}"}
        try:
            async with aiohttp.ClientSession() as http, http.get(attachment.url, headers=headers) as response:
                data = await response.read()
                # Without access Slack answers its sign-in page with a 200: HTML for a file that is not.
                sign_in = response.content_type == "text/html" and attachment.media_type != "text/html"
                problem = f"HTTP {response.status}" if response.status != 200 else "sign-in page" if sign_in else ""
        except aiohttp.ClientError as error:
            problem = str(error)
        if problem:  # the message still goes, with the file by name only
            _log.warning("slack file not fetched", name=attachment.name, problem=problem)
            return attachment
        return attachment.model_copy(update={"data_b64": base64.b64encode(data).decode(), "size": len(data)})

    def _message(self, payload: dict[str, Any]) -> InboundMessage | None:
        event = payload.get("event") or {}
        if event.get("type") != "message":
            return None
        if event.get("bot_id") or event.get("subtype") == "bot_message" or event.get("user") == self._me:
            _log.debug("slack: a bot's message ignored", bot=event.get("bot_id") or event.get("user"))
            return None
        if event.get("subtype") not in _KEPT_SUBTYPES or not event.get("user"):
            _log.info("slack: ignored a message: an edit, a deletion or a kind the agent does not read",
                      subtype=event.get("subtype"), user=event.get("user"), event_id=payload.get("event_id"))
            return None
        direct = event.get("channel_type") == "im"
        thread = event.get("thread_ts") or (None if direct else event["ts"])
        return InboundMessage(
            event_id=str(payload["event_id"]),
            chat=ChatRef(channel=self.name, conversation=event["channel"], thread=thread),
            author=event["user"],
            text=event.get("text", "").removeprefix(f"<@{self._me}>").strip(),  # "@agent clean the build"
            attachments=[_attachment(f) for f in event.get("files", [])],
            received_at=datetime.now(UTC),
        )

    def _action(self, payload: dict[str, Any]) -> InboundMessage | None:
        action = (payload.get("actions") or [{}])[0]
        verb = str(action.get("value", "")).split(":", 1)[0]
        if verb not in ("approve", "deny", "stop"):
            _log.info("slack: ignored a button that is not the agent's", value=str(action.get("value", ""))[:40])
            return None
        container = payload.get("container") or {}
        thread = container.get("thread_ts") or (payload.get("message") or {}).get("thread_ts")
        user = payload.get("user") or {}
        return InboundMessage(
            event_id=str(action["action_ts"]),
            chat=ChatRef(channel=self.name, conversation=container["channel_id"], thread=thread),
            author=user.get("id", ""),
            author_name=user.get("name", ""),
            reaction=verb,
            reply_to=container.get("message_ts"),
            received_at=datetime.now(UTC),
        )

    # --- outbound ----------------------------------------------------------------------------

    async def send(self, message: OutboundMessage) -> Delivered:
        pieces = split_text(_escape(message.text) or "…", SECTION_LIMIT)
        ids = self.posted.ids(message.key)  # pieces an earlier attempt posted: not again
        edit_of = message.edit_of
        if edit_of and message.kind == "answer" and len(pieces) > 1:
            # An answer too long for the progress message it ends: that goes, the answer is posted.
            if not ids:
                await self._delete(message.chat.conversation, edit_of)
            edit_of = None
        for at, piece in enumerate(pieces[len(ids):], start=len(ids)):
            blocks: list[dict[str, Any]] = [{"type": "section", "text": {"type": "mrkdwn", "text": piece}}]
            if at == len(pieces) - 1 and message.buttons:
                blocks.append({"type": "actions", "block_id": "agent_actions", "elements": [
                    {"type": "button", "action_id": f"agent_{b.action}", "value": f"{b.action}:{message.key}"[:2000],
                     "text": {"type": "plain_text", "text": b.label}, **({"style": _STYLES[b.action]}
                                                                          if b.action in _STYLES else {})}
                    for b in message.buttons]})
            if at == 0 and edit_of:
                response = await self._call(self.web.chat_update, channel=message.chat.conversation,
                                            ts=edit_of, text=piece, blocks=blocks)
            else:
                response = await self._call(self.web.chat_postMessage, channel=message.chat.conversation,
                                            thread_ts=message.chat.thread, text=piece, blocks=blocks)
            ids.append(str(response["ts"]))
            self.posted.add(message.key, ids[-1])
        return Delivered(message_ids=ids)

    async def _delete(self, channel: str, ts: str) -> None:
        try:
            await self._call(self.web.chat_delete, channel=channel, ts=ts)
        except SlackApiError as error:
            if error.response.get("error") != "message_not_found":  # a retry: deleted the first time
                raise

    async def _call(self, method: Any, **arguments: Any) -> Any:
        try:
            return await method(**{k: v for k, v in arguments.items() if v is not None})
        except SlackApiError as error:
            if error.response.status_code == 429:
                raise RateLimited(float(error.response.headers.get("Retry-After", "1")),
                                  f"slack rate limited: {error.response.get('error')}") from error
            raise

    async def close(self) -> None:
        """Nothing to release: the web client opens a session per call, and ``receive``
        closes its socket or endpoint when cancelled."""


def _attachment(file: dict[str, Any]) -> Attachment:
    media_type = file.get("mimetype") or "application/octet-stream"
    return Attachment(kind="image" if media_type.startswith("image/") else "file", name=file.get("name", "file"),
                      media_type=media_type, size=int(file.get("size", 0)), url=file.get("url_private"),
                      file_id=file.get("id") or None)


def _escape(text: str) -> str:
    """Slack's three control characters, as its formatting docs ask for in mrkdwn text."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")

"""A local Slack that the real ``slack_sdk`` clients are pointed at (``base_url``), so the Slack
adapter is tested on the documented wire, errors included, and no client library is mocked.

    Web API (POST /api/<method>, form or JSON)   every answer is HTTP 200 ``{"ok": false, "error":
                                                 ...}`` on failure, as Slack's is: ``not_authed``
                                                 (no token), ``invalid_auth`` (a wrong one),
                                                 ``not_allowed_token_type`` (a bot token for
                                                 apps.connections.open), ``channel_not_found``,
                                                 ``no_text``, ``msg_too_long`` (text over 40,000),
                                                 ``invalid_blocks`` (over 50 blocks, a section's
                                                 text over 3,000, a button value over 2,000),
                                                 ``message_not_found``, ``cant_update_message``,
                                                 ``cant_delete_message`` (chat.delete of another's:
                                                 ``deleted`` holds what was deleted)
    rate limit                                   ``limit_next(n, retry_after[, method])``: the next
                                                 n calls answer HTTP 429, ``Retry-After``, ``ratelimited``
    Events API                                   ``send_event``: an ``event_callback`` signed v0
                                                 (HMAC-SHA256 of ``v0:{ts}:{body}``) POSTed to the
                                                 request URL, retried up to 3 times with
                                                 ``X-Slack-Retry-Num`` when not answered 200
                                                 within 3 s (``X-Slack-Retry-Reason``:
                                                 ``http_timeout``, else ``http_error``)
    interactivity                                ``press``: a ``block_actions`` payload, form-encoded
                                                 as ``payload=``, signed the same way
    private files                                ``add_file``: ``url_private`` answers its bytes to
                                                 the bot token, and an HTML sign-in page (200)
                                                 to anyone else, as Slack does; ``file_delay_s``
                                                 makes it slow, ``files_served`` counts answers
    Socket Mode                                  apps.connections.open gives a ``ws://`` URL; the
                                                 socket says ``hello``, then carries the same
                                                 envelopes, redelivered (``retry_attempt``) until
                                                 the client acks the ``envelope_id``
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import itertools
import json
import time
import urllib.parse
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web

BOT_USER = "UBOT0001"
BOT_ID = "BBOT0001"


@dataclass
class Posted:
    channel: str
    ts: str
    text: str
    blocks: list[dict[str, Any]]
    thread_ts: str | None = None
    user: str = BOT_USER
    edits: int = 0


@dataclass
class SlackServer:
    bot_token: str = "xoxb-test"
    app_token: str = "xapp-test"
    signing_secret: str = "slack-signing-secret"
    channels: set[str] = field(default_factory=lambda: {"C0001", "D0001"})
    request_url: str = ""  # where events and interactivity payloads go (the adapter's endpoint)
    redeliver_after_s: float = 0.3  # Slack waits 3 s for an ack; shorter here so a test is quick
    ack_deadline_s: float = 3.0  # Events API: Slack's own, so a test sees a slow answer as Slack does
    file_delay_s: float = 0.0  # before a private file's bytes are answered
    messages: list[Posted] = field(default_factory=list)
    deleted: list[Posted] = field(default_factory=list)  # chat.delete took them out of ``messages``
    calls: list[str] = field(default_factory=list)
    ephemeral: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rate_limited = 0  # 429s answered
        self.files_served = 0  # private files answered with their bytes
        self.connections = 0  # Socket Mode connections opened
        self._ts = itertools.count(1)
        self._limited, self._retry_after, self._limited_method, self._unlimited = 0, 0, "", 0
        self._sockets: list[web.WebSocketResponse] = []
        self._acks: dict[str, asyncio.Event] = {}
        self._runner: web.AppRunner | None = None
        self._files: dict[str, tuple[str, bytes]] = {}
        self.base = ""

    async def __aenter__(self) -> SlackServer:
        app = web.Application()
        app.router.add_post("/api/{method}", self._api)
        app.router.add_get("/link", self._socket)
        app.router.add_get("/files-pri/{file_id}/{name}", self._file)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
        self.base = f"http://127.0.0.1:{port}"
        return self

    async def __aexit__(self, *_: object) -> None:
        for ws in self._sockets:
            await ws.close()
        if self._runner:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"{self.base}/api/"

    def limit_next(self, calls: int, retry_after: int, method: str = "", after: int = 0) -> None:
        """The next ``calls`` calls (of ``method`` only, when named), ``after`` more have gone
        through, are answered 429."""
        self._limited, self._retry_after, self._limited_method, self._unlimited = calls, retry_after, method, after

    def in_channel(self, channel: str) -> list[Posted]:
        return [m for m in self.messages if m.channel == channel]

    # --- Web API -----------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        method = request.match_info["method"]
        self.calls.append(method)
        if self._limited and self._limited_method in ("", method) and self._unlimited:
            self._unlimited -= 1
        elif self._limited and self._limited_method in ("", method):
            self._limited -= 1
            self.rate_limited += 1
            return web.json_response({"ok": False, "error": "ratelimited"}, status=429,
                                     headers={"Retry-After": str(self._retry_after)})
        args: dict[str, Any] = dict(request.query)  # as Slack, arguments in the query too (slack_sdk's chat_delete)
        if request.content_type == "application/json":
            args |= await request.json()
        else:
            args |= dict(await request.post())
        token = request.headers.get("Authorization", "").removeprefix("Bearer ") or str(args.get("token", ""))
        if not token:
            return _error("not_authed")
        if token not in (self.bot_token, self.app_token):
            return _error("invalid_auth")
        if method == "apps.connections.open":
            if token != self.app_token:
                return _error("not_allowed_token_type")
            return web.json_response({"ok": True, "url": f"ws://{self.base.removeprefix('http://')}/link"})
        if token != self.bot_token:
            return _error("not_allowed_token_type")
        handler = {"auth.test": self._auth_test, "chat.postMessage": self._post, "chat.update": self._update,
                   "chat.delete": self._delete, "chat.postEphemeral": self._ephemeral}.get(method)
        if handler is None:
            return _error("unknown_method")
        return handler(args)

    def _auth_test(self, _: dict[str, Any]) -> web.Response:
        return web.json_response({"ok": True, "url": "https://fake.slack.com/", "team": "Fake", "user": "agent",
                                  "team_id": "T0001", "user_id": BOT_USER, "bot_id": BOT_ID})

    def _checked(self, args: dict[str, Any]) -> tuple[str, list[dict[str, Any]]] | web.Response:
        if args.get("channel") not in self.channels:
            return _error("channel_not_found")
        text, blocks = str(args.get("text") or ""), args.get("blocks") or []
        if isinstance(blocks, str):
            blocks = json.loads(blocks)
        if not text and not blocks:
            return _error("no_text")
        if len(text) > 40_000:
            return _error("msg_too_long")
        if len(blocks) > 50 or any(_block_too_big(b) for b in blocks):
            return _error("invalid_blocks")
        return text, blocks

    def _post(self, args: dict[str, Any]) -> web.Response:
        checked = self._checked(args)
        if isinstance(checked, web.Response):
            return checked
        ts = f"{1_700_000_000 + next(self._ts)}.000100"
        posted = Posted(str(args["channel"]), ts, checked[0], checked[1], args.get("thread_ts") or None)
        self.messages.append(posted)
        return web.json_response({"ok": True, "channel": posted.channel, "ts": ts,
                                  "message": {"type": "message", "text": posted.text, "user": BOT_USER,
                                              "bot_id": BOT_ID, "ts": ts}})

    def _update(self, args: dict[str, Any]) -> web.Response:
        checked = self._checked(args)
        if isinstance(checked, web.Response):
            return checked
        found = next((m for m in self.messages if m.channel == args["channel"] and m.ts == args.get("ts")), None)
        if found is None:
            return _error("message_not_found")
        if found.user != BOT_USER:
            return _error("cant_update_message")
        found.text, found.blocks, found.edits = checked[0], checked[1], found.edits + 1
        return web.json_response({"ok": True, "channel": found.channel, "ts": found.ts, "text": found.text})

    def _delete(self, args: dict[str, Any]) -> web.Response:
        found = next((m for m in self.messages if m.channel == args.get("channel") and m.ts == args.get("ts")), None)
        if found is None:
            return _error("message_not_found")
        if found.user != BOT_USER:
            return _error("cant_delete_message")
        self.messages.remove(found)
        self.deleted.append(found)
        return web.json_response({"ok": True, "channel": found.channel, "ts": found.ts})

    def _ephemeral(self, args: dict[str, Any]) -> web.Response:
        checked = self._checked(args)
        if isinstance(checked, web.Response):
            return checked
        self.ephemeral.append({"channel": args["channel"], "user": args.get("user"), "text": checked[0]})
        return web.json_response({"ok": True, "message_ts": f"{1_700_000_000 + next(self._ts)}.000200"})

    def add_file(self, name: str, mimetype: str, data: bytes) -> dict[str, Any]:
        """A file a person uploaded, as a message event's ``files`` entry shows it."""
        file_id = f"F{next(self._ts):07d}"
        self._files[file_id] = (mimetype, data)
        url = f"{self.base}/files-pri/T0001-{file_id}/{name}"
        return {"id": file_id, "name": name, "title": name, "mimetype": mimetype, "filetype": name.rsplit(".")[-1],
                "size": len(data), "url_private": url, "url_private_download": f"{url}?download=1"}

    async def _file(self, request: web.Request) -> web.Response:
        """A private file URL: its bytes for the bot token; without it, Slack's sign-in page
        (an HTML 200, not an error: a client must look at what it got)."""
        found = self._files.get(request.match_info["file_id"].removeprefix("T0001-"))
        if request.headers.get("Authorization") != f"Bearer {self.bot_token}":
            return web.Response(text="<!DOCTYPE html><html><body>Sign in to Slack</body></html>",
                                content_type="text/html")
        if found is None:
            return web.Response(status=404, text="file not found")
        await asyncio.sleep(self.file_delay_s)
        self.files_served += 1
        return web.Response(body=found[1], content_type=found[0])

    # --- what Slack sends to the app ---------------------------------------------------------

    def sign(self, body: bytes, timestamp: int | None = None, secret: str | None = None) -> dict[str, str]:
        ts = str(int(time.time()) if timestamp is None else timestamp)
        base = f"v0:{ts}:".encode() + body
        digest = hmac.new((secret or self.signing_secret).encode(), base, hashlib.sha256).hexdigest()
        return {"X-Slack-Request-Timestamp": ts, "X-Slack-Signature": f"v0={digest}"}

    async def post_signed(self, body: bytes, content_type: str, headers: dict[str, str] | None = None,
                          **sign: Any) -> tuple[int, str]:
        all_headers = {"Content-Type": content_type, **self.sign(body, **sign), **(headers or {})}
        async with aiohttp.ClientSession() as http:
            async with http.post(self.request_url, data=body, headers=all_headers) as response:
                return response.status, await response.text()

    async def verify_url(self, challenge: str = "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P") -> str:
        body = json.dumps({"token": "legacy", "challenge": challenge, "type": "url_verification"}).encode()
        _, text = await self.post_signed(body, "application/json")
        return text

    async def send_event(self, event: dict[str, Any], event_id: str) -> list[int]:
        """One event as Slack sends it: over the socket when an app is connected, else POSTed
        (and retried up to 3 times). The statuses answered (socket: 200 per ack, 0 per miss)."""
        envelope = {"token": "legacy", "team_id": "T0001", "api_app_id": "A0001", "event": event,
                    "type": "event_callback", "event_id": event_id, "event_time": int(time.time())}
        if self._sockets:
            return await self._over_socket("events_api", envelope)
        body = json.dumps(envelope).encode()
        return await self._post_with_retries(body, "application/json")

    async def press(self, user: str, channel: str, message_ts: str, action_id: str, value: str,
                    thread_ts: str | None = None) -> list[int]:
        """A person presses a Block Kit button on message ``message_ts``."""
        action_ts = f"{time.time():.6f}"
        payload = {
            "type": "block_actions", "team": {"id": "T0001"}, "api_app_id": "A0001", "token": "legacy",
            "user": {"id": user, "username": user.lower(), "name": user.lower(), "team_id": "T0001"},
            "channel": {"id": channel, "name": "general"}, "trigger_id": "1.2.3",
            "container": {"type": "message", "message_ts": message_ts, "channel_id": channel,
                          "is_ephemeral": False, **({"thread_ts": thread_ts} if thread_ts else {})},
            "message": {"type": "message", "ts": message_ts, "user": BOT_USER, "bot_id": BOT_ID,
                        **({"thread_ts": thread_ts} if thread_ts else {})},
            "response_url": f"{self.base}/actions/response",
            "actions": [{"type": "button", "action_id": action_id, "block_id": "approval", "value": value,
                         "text": {"type": "plain_text", "text": value}, "action_ts": action_ts}],
        }
        if self._sockets:
            return await self._over_socket("interactive", payload)
        body = urllib.parse.urlencode({"payload": json.dumps(payload)}).encode()
        return await self._post_with_retries(body, "application/x-www-form-urlencoded")

    async def _post_with_retries(self, body: bytes, content_type: str) -> list[int]:
        """The statuses answered, 0 for an answer not in by the deadline (Slack gives up on it)."""
        statuses: list[int] = []
        for attempt in range(4):
            reason = "http_timeout" if statuses[-1:] == [0] else "http_error"
            retry = {"X-Slack-Retry-Num": str(attempt), "X-Slack-Retry-Reason": reason} if attempt else {}
            try:
                async with asyncio.timeout(self.ack_deadline_s):
                    status, _ = await self.post_signed(body, content_type, retry)
            except TimeoutError:
                status = 0
            statuses.append(status)
            if status == 200:
                break
        return statuses

    # --- Socket Mode -------------------------------------------------------------------------

    async def _socket(self, request: web.Request) -> web.WebSocketResponse:
        ws = web.WebSocketResponse()  # answers the SDK's pings with pongs, as Slack does
        await ws.prepare(request)
        self._sockets.append(ws)
        self.connections += 1
        await ws.send_json({"type": "hello", "num_connections": len(self._sockets),
                            "debug_info": {"host": "fake"}, "connection_info": {"app_id": "A0001"}})
        async for frame in ws:
            if frame.type == aiohttp.WSMsgType.TEXT:
                ack = json.loads(frame.data).get("envelope_id")
                if ack in self._acks:
                    self._acks[ack].set()
        self._sockets.remove(ws)
        return ws

    async def disconnect(self, reason: str = "refresh_requested") -> None:
        """What Slack sends before it closes a socket (every few hours): the client opens another."""
        await self._sockets[-1].send_json({"type": "disconnect", "reason": reason, "debug_info": {"host": "fake"}})

    @property
    def sockets_open(self) -> int:
        return len(self._sockets)

    async def wait_for_socket(self) -> None:
        while not self._sockets:
            await asyncio.sleep(0.02)

    async def _over_socket(self, kind: str, payload: dict[str, Any]) -> list[int]:
        envelope_id = f"env-{next(self._ts)}"
        acked = self._acks[envelope_id] = asyncio.Event()
        statuses: list[int] = []
        for attempt in range(4):
            await self._sockets[-1].send_json({"envelope_id": envelope_id, "type": kind, "payload": payload,
                                               "accepts_response_payload": False, "retry_attempt": attempt,
                                               "retry_reason": "timeout" if attempt else ""})
            try:
                await asyncio.wait_for(acked.wait(), self.redeliver_after_s)
                statuses.append(200)
                break
            except TimeoutError:
                statuses.append(0)
        return statuses


def _error(error: str) -> web.Response:
    return web.json_response({"ok": False, "error": error})


def _block_too_big(block: dict[str, Any]) -> bool:
    if block.get("type") == "section" and len(block.get("text", {}).get("text", "")) > 3000:
        return True
    return any(len(str(e.get("value", ""))) > 2000 for e in block.get("elements", []))

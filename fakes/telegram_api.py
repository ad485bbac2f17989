"""A local Telegram Bot API that the real ``python-telegram-bot`` is pointed at (``Bot(base_url=
...)``), so the Telegram adapter is tested on the documented wire, errors included.

    /bot<token>/<method>, query, form or JSON    ``{"ok": true, "result": ...}``; a failure is
                                                 ``{"ok": false, "error_code": N, "description":
                                                 ...}`` with HTTP status N, in Telegram's words:
    a wrong token                                401 "Unauthorized"
    an unknown method                            404 "Not Found"
    text empty / over 4,096 characters           400 "Bad Request: message text is empty" /
                                                 "Bad Request: message is too long"
    an unknown chat                              400 "Bad Request: chat not found"
    callback_data over 64 bytes                  400 "Bad Request: BUTTON_DATA_INVALID"
    editMessageText of no such message /         400 "Bad Request: message to edit not found" /
      with the same text and keyboard            "Bad Request: message is not modified: ..."
    deleteMessage of no such message             400 "Bad Request: message to delete not found"
                                                 (``deleted`` holds what was deleted)
    answerCallbackQuery of an unknown query      400 "Bad Request: query is too old and response
                                                 timeout expired or query ID is invalid"
    getUpdates while a webhook is set            409 "Conflict: can't use getUpdates method while
                                                 webhook is active; use deleteWebhook to delete
                                                 the webhook first"
    a getUpdates while another one waits         the waiting one: 409 "Conflict: terminated by
                                                 other getUpdates request; make sure that only
                                                 one bot instance is running"
    a secret_token outside [A-Za-z0-9_-]{1,256}  400 "Bad Request: secret token contains
                                                 unallowed characters"
    ``limit_next(n, retry_after[, method])``     429 "Too Many Requests: retry after N" with
                                                 ``parameters.retry_after``

getFile gives a ``file_path`` whose bytes are at ``/file/bot<token>/<file_path>`` (a photo
sent with ``user_sends_photo``). getUpdates confirms every update below ``offset`` and
long-polls up to ``timeout`` seconds. With a webhook set, each update is POSTed to it with
``X-Telegram-Bot-Api-Secret-Token`` and sent again until it is answered 2xx.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import re
import time
from dataclasses import dataclass, field
from html.parser import HTMLParser
from typing import Any

import aiohttp
from aiohttp import web

BOT = {"id": 7000001, "is_bot": True, "first_name": "Agent", "username": "agent_bot", "can_join_groups": True,
       "can_read_all_group_messages": False, "supports_inline_queries": False}


@dataclass
class Sent:
    chat_id: int
    message_id: int
    text: str
    reply_markup: dict[str, Any] | None = None
    message_thread_id: int | None = None
    edits: int = 0
    entities: list[dict[str, Any]] = field(default_factory=list)  # with parse_mode HTML: its pre/code


@dataclass
class TelegramServer:
    token: str = "7000001:AAE-test-token"
    chats: dict[int, str] = field(default_factory=lambda: {1001: "private", -100200: "supergroup"})
    redeliver_after_s: float = 0.2  # Telegram backs off for longer; shorter here so a test is quick
    sent: list[Sent] = field(default_factory=list)
    deleted: list[Sent] = field(default_factory=list)  # deleteMessage took them out of ``sent``
    answered: list[dict[str, Any]] = field(default_factory=list)
    served: list[int] = field(default_factory=list)  # update ids, each time getUpdates returned one
    webhook_url: str = ""
    webhook_secret: str = ""

    def __post_init__(self) -> None:
        self.rate_limited = 0  # 429s answered
        self._ids = itertools.count(1)
        self._pending: list[dict[str, Any]] = []
        self._queries: set[str] = set()
        self._files: dict[str, tuple[str, bytes]] = {}  # file_id -> (file_path, bytes)
        self.polls = 0  # getUpdates calls so far: a newer one ends the one waiting
        self._closing = False
        self.conflicts = 0  # polls ended by a newer one (409)
        self._arrived = asyncio.Condition()
        self._limited, self._retry_after, self._limited_method, self._unlimited = 0, 0, "", 0
        self._runner: web.AppRunner | None = None
        self.base = ""

    async def __aenter__(self) -> TelegramServer:
        app = web.Application()
        app.router.add_route("*", "/bot{token}/{method}", self._api)
        app.router.add_get("/file/bot{token}/{path:.+}", self._download)
        self._runner = web.AppRunner(app)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.base = f"http://127.0.0.1:{site._server.sockets[0].getsockname()[1]}"  # type: ignore[union-attr]
        return self

    async def __aexit__(self, *_: object) -> None:
        async with self._arrived:  # end the long polls still waiting, so the server stops at once
            self._closing = True
            self._arrived.notify_all()
        if self._runner:
            await self._runner.cleanup()

    @property
    def api_url(self) -> str:
        return f"{self.base}/bot"

    @property
    def file_url(self) -> str:
        return f"{self.base}/file/bot"

    def limit_next(self, calls: int, retry_after: int, method: str = "", after: int = 0) -> None:
        """The next ``calls`` calls (of ``method`` only, when named), ``after`` more have gone
        through, are answered 429."""
        self._limited, self._retry_after, self._limited_method, self._unlimited = calls, retry_after, method, after

    # --- what people do ----------------------------------------------------------------------

    async def user_says(self, user_id: int, chat_id: int, text: str, thread_id: int | None = None,
                        is_bot: bool = False) -> list[int]:
        message: dict[str, Any] = {"message_id": next(self._ids), "from": _user(user_id, is_bot),
                                   "chat": self._chat(chat_id, user_id), "date": int(time.time()), "text": text}
        if thread_id is not None:
            message |= {"message_thread_id": thread_id, "is_topic_message": True}
        return await self._arrive({"message": message})

    async def user_sends_photo(self, user_id: int, chat_id: int, caption: str, data: bytes) -> list[int]:
        """A photo with a caption; Telegram lists its sizes, the largest last (one here)."""
        file_id = f"AgAC{next(self._ids):06d}"
        self._files[file_id] = (f"photos/file_{len(self._files)}.jpg", data)
        photo = [{"file_id": file_id, "file_unique_id": f"u{file_id}", "width": 64, "height": 64,
                  "file_size": len(data)}]
        return await self._arrive({"message": {"message_id": next(self._ids), "from": _user(user_id, False),
                                               "chat": self._chat(chat_id, user_id), "date": int(time.time()),
                                               "photo": photo, "caption": caption}})

    async def press(self, user_id: int, sent: Sent, data: str) -> list[int]:
        """A person presses an inline keyboard button under the bot's message ``sent``."""
        query_id = f"q{next(self._ids)}"
        self._queries.add(query_id)
        message = {"message_id": sent.message_id, "from": BOT, "chat": self._chat(sent.chat_id, user_id),
                   "date": int(time.time()), "text": sent.text, "reply_markup": sent.reply_markup}
        if sent.message_thread_id is not None:
            message |= {"message_thread_id": sent.message_thread_id, "is_topic_message": True}
        return await self._arrive({"callback_query": {"id": query_id, "from": _user(user_id, False),
                                                      "message": message, "chat_instance": "ci1", "data": data}})

    def _chat(self, chat_id: int, user_id: int) -> dict[str, Any]:
        kind = self.chats[chat_id]
        if kind == "private":
            return {"id": chat_id, "type": "private", "first_name": f"user{user_id}"}
        return {"id": chat_id, "type": kind, "title": "Team", "is_forum": True}

    async def _arrive(self, content: dict[str, Any]) -> list[int]:
        update = {"update_id": 500_000 + next(self._ids), **content}
        if not self.webhook_url:
            async with self._arrived:
                self._pending.append(update)
                self._arrived.notify_all()
            return []
        statuses: list[int] = []
        headers = {"X-Telegram-Bot-Api-Secret-Token": self.webhook_secret} if self.webhook_secret else {}
        async with aiohttp.ClientSession() as http:
            for attempt in range(4):
                if attempt:
                    await asyncio.sleep(self.redeliver_after_s)
                async with http.post(self.webhook_url, json=update, headers=headers) as response:
                    statuses.append(response.status)
                if 200 <= statuses[-1] < 300:
                    break
        return statuses

    # --- the Bot API -------------------------------------------------------------------------

    async def _api(self, request: web.Request) -> web.Response:
        if self._limited and self._limited_method in ("", request.match_info["method"]) and self._unlimited:
            self._unlimited -= 1
        elif self._limited and self._limited_method in ("", request.match_info["method"]):
            self._limited -= 1
            self.rate_limited += 1
            return _fail(429, f"Too Many Requests: retry after {self._retry_after}",
                         parameters={"retry_after": self._retry_after})
        if request.match_info["token"] != self.token:
            return _fail(401, "Unauthorized")
        args: dict[str, Any] = dict(request.query)
        if request.content_type == "application/json":
            args |= await request.json()
        elif request.can_read_body:
            args |= {k: _decoded(v) for k, v in (await request.post()).items()}
        handler = {"getMe": self._get_me, "getFile": self._get_file, "getUpdates": self._get_updates,
                   "sendMessage": self._send, "editMessageText": self._edit, "deleteMessage": self._delete,
                   "answerCallbackQuery": self._answer,
                   "setWebhook": self._set_webhook, "deleteWebhook": self._delete_webhook,
                   }.get(request.match_info["method"])
        if handler is None:
            return _fail(404, "Not Found")
        return await handler(args)

    async def _get_me(self, _: dict[str, Any]) -> web.Response:
        return _ok(BOT)

    async def _get_file(self, args: dict[str, Any]) -> web.Response:
        found = self._files.get(str(args.get("file_id")))
        if found is None:
            return _fail(400, "Bad Request: invalid file_id")
        return _ok({"file_id": args["file_id"], "file_unique_id": f"u{args['file_id']}", "file_size": len(found[1]),
                    "file_path": found[0]})

    async def _download(self, request: web.Request) -> web.Response:
        if request.match_info["token"] != self.token:
            return _fail(401, "Unauthorized")
        found = next((data for path, data in self._files.values() if path == request.match_info["path"]), None)
        return web.Response(body=found) if found is not None else _fail(404, "Not Found")

    async def _get_updates(self, args: dict[str, Any]) -> web.Response:
        if self.webhook_url:
            return _fail(409, "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook "
                              "to delete the webhook first")
        offset, timeout = int(args.get("offset") or 0), float(args.get("timeout") or 0)
        self.polls += 1
        me = self.polls
        async with self._arrived:
            self._arrived.notify_all()  # a poll still waiting is ended by this one
            self._pending = [u for u in self._pending if u["update_id"] >= offset]  # confirmed: gone
            if not self._pending and timeout:
                ended = lambda: bool(self._pending) or self.polls != me or self._closing
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._arrived.wait_for(ended), timeout)
            if self.polls != me:
                self.conflicts += 1
                return _fail(409, "Conflict: terminated by other getUpdates request; make sure that only one bot "
                                  "instance is running")
            updates = self._pending[: int(args.get("limit") or 100)]
        self.served += [u["update_id"] for u in updates]
        return _ok(updates)

    def _text_error(self, args: dict[str, Any]) -> web.Response | None:
        """A refusal as Telegram words it; with ``parse_mode`` HTML, ``args`` is rewritten to the
        parsed text and its entities, which is what the limits count and the chat shows."""
        if int(args.get("chat_id", 0)) not in self.chats:
            return _fail(400, "Bad Request: chat not found")
        if args.get("parse_mode") not in (None, "HTML"):
            return _fail(400, f"Bad Request: unsupported parse_mode {args['parse_mode']}")
        if args.get("parse_mode") == "HTML":
            parsed = parse_html(str(args.get("text") or ""))
            if isinstance(parsed, str):
                return _fail(400, f"Bad Request: can't parse entities: {parsed}")
            args["text"], args["entities"] = parsed
        text = str(args.get("text") or "")
        if not text.strip():
            return _fail(400, "Bad Request: message text is empty")
        if len(text) > 4096:
            return _fail(400, "Bad Request: message is too long")
        buttons = (args.get("reply_markup") or {}).get("inline_keyboard", [])
        if any(not 1 <= len(b.get("callback_data", "x").encode()) <= 64 for row in buttons for b in row):
            return _fail(400, "Bad Request: BUTTON_DATA_INVALID")
        return None

    async def _send(self, args: dict[str, Any]) -> web.Response:
        if error := self._text_error(args):
            return error
        thread = args.get("message_thread_id")
        sent = Sent(int(args["chat_id"]), next(self._ids), str(args["text"]), args.get("reply_markup"),
                    int(thread) if thread else None, entities=args.get("entities", []))
        self.sent.append(sent)
        return _ok(self._message(sent))

    async def _edit(self, args: dict[str, Any]) -> web.Response:
        if error := self._text_error(args):
            return error
        found = next((s for s in self.sent if s.chat_id == int(args["chat_id"])
                      and s.message_id == int(args.get("message_id") or 0)), None)
        if found is None:
            return _fail(400, "Bad Request: message to edit not found")
        if found.text == args["text"] and found.reply_markup == args.get("reply_markup"):
            return _fail(400, "Bad Request: message is not modified: specified new message content and reply "
                              "markup are exactly the same as a current content and reply markup of the message")
        found.text, found.reply_markup, found.edits = str(args["text"]), args.get("reply_markup"), found.edits + 1
        found.entities = args.get("entities", [])
        return _ok(self._message(found))

    async def _delete(self, args: dict[str, Any]) -> web.Response:
        found = next((s for s in self.sent if s.chat_id == int(args["chat_id"])
                      and s.message_id == int(args.get("message_id") or 0)), None)
        if found is None:
            return _fail(400, "Bad Request: message to delete not found")
        self.sent.remove(found)
        self.deleted.append(found)
        return _ok(True)

    async def _answer(self, args: dict[str, Any]) -> web.Response:
        if args.get("callback_query_id") not in self._queries:
            return _fail(400, "Bad Request: query is too old and response timeout expired or query ID is invalid")
        self._queries.discard(args["callback_query_id"])
        self.answered.append({"text": args.get("text"), "show_alert": args.get("show_alert", False)})
        return _ok(True)

    async def _set_webhook(self, args: dict[str, Any]) -> web.Response:
        secret = str(args.get("secret_token") or "")
        if secret and not re.fullmatch(r"[A-Za-z0-9_-]{1,256}", secret):
            return _fail(400, "Bad Request: secret token contains unallowed characters")
        self.webhook_url, self.webhook_secret = str(args.get("url") or ""), secret
        return _ok(True)

    async def _delete_webhook(self, _: dict[str, Any]) -> web.Response:
        self.webhook_url = self.webhook_secret = ""
        return _ok(True)

    def _message(self, sent: Sent) -> dict[str, Any]:
        message: dict[str, Any] = {"message_id": sent.message_id, "from": BOT, "date": int(time.time()),
                                   "chat": self._chat(sent.chat_id, 0), "text": sent.text}
        if sent.reply_markup:
            message["reply_markup"] = sent.reply_markup
        if sent.message_thread_id is not None:
            message |= {"message_thread_id": sent.message_thread_id, "is_topic_message": True}
        return message


_TAGS = {"b", "strong", "i", "em", "u", "ins", "s", "strike", "del", "a", "code", "pre", "blockquote", "tg-spoiler",
         "span", "tg-emoji"}


def parse_html(text: str) -> tuple[str, list[dict[str, Any]]] | str:
    """Telegram's HTML parse mode: the text and its ``pre``/``code`` entities, or why it is
    refused. As strict as the Bot API's rules: only its tags, each closed in order, and every
    ``<``, ``>``, ``&`` not part of a tag or an entity escaped."""
    if (bare := re.search(r"<(?!/?[a-zA-Z])|&(?!(?:lt|gt|amp|quot|#\d+|#x[0-9a-fA-F]+);)", text)) is not None:
        return f"Unexpected character at byte offset {len(text[:bare.start()].encode())}"
    parser = _Entities()
    parser.feed(text)
    parser.close()
    if parser.problem is None and parser.open:
        parser.problem = f'Can\'t find end tag corresponding to start tag "{parser.open[-1][0]}"'
    return parser.problem if parser.problem is not None else ("".join(parser.text), parser.entities)


class _Entities(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.text: list[str] = []
        self.open: list[tuple[str, int, dict[str, str | None]]] = []  # tag, offset, attributes
        self.entities: list[dict[str, Any]] = []
        self.problem: str | None = None

    def _offset(self) -> int:  # in UTF-16 code units, as the Bot API counts
        return len("".join(self.text).encode("utf-16-le")) // 2

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag not in _TAGS:
            self.problem = self.problem or f'Unsupported start tag "{tag}"'
        self.open.append((tag, self._offset(), dict(attrs)))

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open[-1][0] != tag:
            self.problem = self.problem or f'Unmatched end tag "{tag}"'
            return
        _, offset, attrs = self.open.pop()
        language = str(attrs.get("class") or "")
        if tag == "code" and self.open and self.open[-1][0] == "pre":  # <pre><code class=...>: one pre entity
            if language.startswith("language-"):
                self.open[-1][2]["language"] = language.removeprefix("language-")
        elif tag in ("pre", "code"):
            entity: dict[str, Any] = {"type": tag, "offset": offset, "length": self._offset() - offset}
            if attrs.get("language"):
                entity["language"] = attrs["language"]
            self.entities.append(entity)

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _user(user_id: int, is_bot: bool) -> dict[str, Any]:
    return {"id": user_id, "is_bot": is_bot, "first_name": f"user{user_id}", "username": f"user{user_id}"}


def _decoded(value: Any) -> Any:
    """Form fields carry objects as JSON text (reply_markup, allowed_updates), as Telegram reads them."""
    if isinstance(value, str) and value[:1] in "[{":
        return json.loads(value)
    return value if not isinstance(value, str) or value not in ("true", "false") else value == "true"


def _ok(result: Any) -> web.Response:
    return web.json_response({"ok": True, "result": result})


def _fail(code: int, description: str, **more: Any) -> web.Response:
    return web.json_response({"ok": False, "error_code": code, "description": description, **more}, status=code)

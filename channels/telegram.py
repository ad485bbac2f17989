"""Telegram, on ``python-telegram-bot`` (issue 31): private chats and groups in, answers and
inline-keyboard approvals out.

Long polling moves its offset past an update only after ``deliver`` returns, and a webhook
POST (its secret token checked) is answered 200 only then, so a failed delivery comes again.
We drive ``Bot`` ourselves: ``Application``'s updater confirms updates as it queues them.
A chat is a conversation, a forum topic a thread; answers are split at 4,096 characters and
sent as HTML so code shows as code (``code_html``), progress is edited in place, a 429 is ``RateLimited``. The rest: docs/channels.md.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import functools
import hmac
import warnings
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Literal

import structlog
from aiohttp import web
from pydantic import BaseModel, ConfigDict
from telegram import (
    Bot,
    Document,
    InlineKeyboardButton,
    InlineKeyboardMarkup,
    Message,
    PhotoSize,
    ReplyParameters,
    Update,
)
from telegram.constants import ParseMode
from telegram.error import BadRequest, Conflict, NetworkError, RetryAfter, TelegramError
from telegram.warnings import PTBDeprecationWarning

from channels.base import ATTACHMENT_BYTES, Deliver, RateLimited, code_html, split_text
from channels.config import ChannelConfig
from channels.console import dropped
from channels.listen import Endpoint
from channels.posted import PostedRecord, record_path
from contracts.attachments import Attachment
from contracts.channels import ChatRef, Delivered, InboundMessage, OutboundMessage

TEXT_LIMIT = 4096
_UPDATES = ["message", "callback_query"]
_FIRST_BACKOFF_S, _LAST_BACKOFF_S = 0.1, 30.0  # between tries after a failed poll or deliver
_CONFIRMED = {"approve": "Approved.", "deny": "Denied.", "stop": "Stopping."}

_log = structlog.get_logger(__name__)


class TelegramSettings(BaseModel):
    """The ``[telegram]`` table's own keys (``allowed_users``: user ids, as text; channels/config.py)."""

    model_config = ConfigDict(extra="forbid")

    bot_token: str  # from @BotFather
    mode: Literal["polling", "webhook"] = "polling"
    webhook_url: str = ""  # the public HTTPS URL Telegram posts to; empty: this endpoint's own URL
    webhook_secret: str = ""  # 1-256 of A-Z a-z 0-9 _ -, sent back on every POST
    host: str = "127.0.0.1"
    port: int = 8443
    path: str = "/telegram"
    poll_timeout_s: int = 30
    api_url: str = "https://api.telegram.org/bot"
    file_url: str = "https://api.telegram.org/file/bot"


def adapter(config: ChannelConfig, state_dir: Path) -> TelegramAdapter:
    """The gateway's way in (every channel module has one)."""
    return TelegramAdapter(config, state_dir)


class TelegramAdapter:
    def __init__(self, config: ChannelConfig, state_dir: Path | None = None) -> None:
        settings = config.settings(TelegramSettings)
        if settings.mode == "webhook" and not settings.webhook_secret:
            raise ValueError(f"channel [{config.name}]: webhook mode needs webhook_secret")
        self.name = config.name
        self.config, self.settings = config, settings
        self.bot = Bot(settings.bot_token, base_url=settings.api_url, base_file_url=settings.file_url)
        self.endpoint = Endpoint(settings.host, settings.port, settings.path)
        self.posted = PostedRecord(record_path(state_dir, config.name))
        self.polling = asyncio.Event()  # set once the first getUpdates is under way

    # --- inbound -----------------------------------------------------------------------------

    async def receive(self, deliver: Deliver) -> None:
        await self.bot.initialize()  # getMe: a wrong token fails here, as 401 Unauthorized
        if self.settings.mode == "webhook":
            serving = asyncio.create_task(self.endpoint.serve(functools.partial(self._on_post, deliver=deliver)))
            try:
                await self.endpoint.ready.wait()
                await self.bot.set_webhook(self.settings.webhook_url or self.endpoint.url,
                                           secret_token=self.settings.webhook_secret, allowed_updates=_UPDATES)
                await serving
            finally:
                serving.cancel()
        else:
            await self.bot.delete_webhook()  # getUpdates and a webhook exclude each other
            await self._poll(deliver)

    async def _poll(self, deliver: Deliver) -> None:
        offset: int | None = None
        backoff = _FIRST_BACKOFF_S
        while True:
            self.polling.set()
            try:
                updates = await self.bot.get_updates(offset=offset, timeout=self.settings.poll_timeout_s,
                                                     allowed_updates=_UPDATES)
            except RetryAfter as limited:
                await asyncio.sleep(_seconds(limited))
                continue
            except (Conflict, NetworkError) as error:  # another poller (409), a dropped connection
                _log.warning("telegram getUpdates failed; polling again", error=str(error))
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, _LAST_BACKOFF_S)
                continue
            for update in updates:
                try:
                    await self._handle(update, deliver)
                except Exception:
                    _log.exception("telegram update not delivered; fetching it again", update_id=update.update_id)
                    await asyncio.sleep(backoff)
                    backoff = min(backoff * 2, _LAST_BACKOFF_S)
                    break
                offset, backoff = update.update_id + 1, _FIRST_BACKOFF_S  # the next getUpdates confirms it

    async def _on_post(self, request: web.Request, deliver: Deliver) -> web.Response:
        secret = request.headers.get("X-Telegram-Bot-Api-Secret-Token", "")
        if not hmac.compare_digest(secret.encode(), self.settings.webhook_secret.encode()):
            _log.warning("telegram webhook refused: wrong secret token")
            return web.Response(status=403, text="wrong secret token")
        update = Update.de_json(await request.json(), self.bot)
        try:
            await self._handle(update, deliver)
        except Exception:
            _log.exception("telegram update not delivered; Telegram will send it again", update_id=update.update_id)
            return web.Response(status=500, text="not delivered")
        return web.Response(status=200)

    async def _handle(self, update: Update, deliver: Deliver) -> None:
        query = update.callback_query
        message = self._normalized(update)
        if message is None:
            if query:
                await query.answer()
            return
        refusal = self.config.refusal(message.author, message.reaction)
        if refusal:
            dropped(message, refusal.why)
            if query:
                await query.answer(refusal.told, show_alert=True)
            return
        if update.message and message.attachments:
            message = message.model_copy(update={"attachments": await _fetched(update.message)})
        await deliver(message)
        if query and message.reaction:
            await query.answer(_CONFIRMED[message.reaction])

    def _normalized(self, update: Update) -> InboundMessage | None:
        query = update.callback_query
        if query is not None:
            verb = (query.data or "").split(":", 1)[0]
            if query.from_user.is_bot or verb not in _CONFIRMED or not isinstance(query.message, Message):
                _log.info("telegram: ignored a button press that decides nothing", update_id=update.update_id)
                return None
            return InboundMessage(
                event_id=str(update.update_id), chat=self._chat(query.message), author=str(query.from_user.id),
                author_name=query.from_user.full_name, reaction=verb, reply_to=str(query.message.message_id),
                received_at=datetime.now(UTC))
        message = update.message
        if message is None or message.from_user is None:
            return None
        if message.from_user.is_bot:
            _log.debug("telegram: a bot's message ignored", bot=message.from_user.id)
            return None
        text = self._command(message.text or message.caption or "")
        if text == "/start":  # what Telegram sends when a person opens the bot: no task
            _log.info("telegram: ignored /start (a person opening the bot)", update_id=update.update_id)
            return None
        reply = message.reply_to_message
        return InboundMessage(
            event_id=str(update.update_id), chat=self._chat(message), author=str(message.from_user.id),
            author_name=message.from_user.full_name, text=text,
            attachments=_attachments(message), reply_to=str(reply.message_id) if reply else None,
            received_at=datetime.now(UTC))

    def _command(self, text: str) -> str:
        """``/stop@agent_bot`` (a command in a group names the bot) as ``/stop``."""
        suffix = f"@{self.bot.username}"
        first, _, rest = text.partition(" ")
        if first.startswith("/") and first.lower().endswith(suffix.lower()):
            return (first[: -len(suffix)] + " " + rest).strip()
        return text

    def _chat(self, message: Message) -> ChatRef:
        thread = str(message.message_thread_id) if message.is_topic_message and message.message_thread_id else None
        return ChatRef(channel=self.name, conversation=str(message.chat.id), thread=thread)

    # --- outbound ----------------------------------------------------------------------------

    async def send(self, message: OutboundMessage) -> Delivered:
        pieces = split_text(message.text.strip() or "…", TEXT_LIMIT)
        chat_id = int(message.chat.conversation)
        keyboard = InlineKeyboardMarkup([[
            InlineKeyboardButton(b.label, callback_data=_callback_data(b.action, message.key))
            for b in message.buttons]]) if message.buttons else None
        # A reply names a Telegram message id (digits); anything else is no message to quote.
        reply_to = message.reply_to if message.reply_to and message.reply_to.isdigit() else None
        ids = self.posted.ids(message.key)  # pieces an earlier attempt posted: not again
        edit_of = message.edit_of
        try:
            if edit_of and message.kind == "answer" and len(pieces) > 1:  # too long for the progress message it ends:
                await self._delete(chat_id, int(edit_of))  # that goes (a retry finds it gone), the answer is posted
                edit_of = None
            for at, piece in enumerate(pieces[len(ids):], start=len(ids)):
                markup = keyboard if at == len(pieces) - 1 else None
                if at == 0 and edit_of:
                    ids.append(await self._edit(chat_id, int(edit_of), piece, markup))
                else:
                    replying = ReplyParameters(message_id=int(reply_to), allow_sending_without_reply=True) \
                        if at == 0 and reply_to else None
                    sent = await self.bot.send_message(
                        chat_id, code_html(piece), parse_mode=ParseMode.HTML, reply_markup=markup,
                        reply_parameters=replying,
                        message_thread_id=int(message.chat.thread) if message.chat.thread else None)
                    ids.append(str(sent.message_id))
                self.posted.add(message.key, ids[-1])
        except RetryAfter as limited:
            raise RateLimited(_seconds(limited), f"telegram rate limited: {limited}") from limited
        return Delivered(message_ids=ids)

    async def _edit(self, chat_id: int, message_id: int, text: str, markup: InlineKeyboardMarkup | None) -> str:
        try:
            await self.bot.edit_message_text(code_html(text), chat_id=chat_id, message_id=message_id,
                                             parse_mode=ParseMode.HTML, reply_markup=markup)
        except BadRequest as error:
            if "message is not modified" not in str(error).lower():  # a retried edit that already landed
                raise
        return str(message_id)

    async def _delete(self, chat_id: int, message_id: int) -> None:
        with contextlib.suppress(BadRequest):  # not found (a retry: deleted the first time), or too old to delete
            await self.bot.delete_message(chat_id, message_id)

    async def close(self) -> None:
        await self.bot.shutdown()


def _callback_data(action: str, key: str) -> str:
    """``action:key`` within Telegram's 64 bytes; the action, first, is what counts."""
    return f"{action}:{key}".encode()[:64].decode(errors="ignore")


def _seconds(limited: RetryAfter) -> float:
    with warnings.catch_warnings():  # PTB 22 warns that retry_after becomes a timedelta; either is read
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        retry_after = limited.retry_after
    return retry_after.total_seconds() if isinstance(retry_after, timedelta) else float(retry_after)


def _files(message: Message) -> list[tuple[Attachment, PhotoSize | Document]]:
    """What the message carries, described, with the Telegram object that fetches its bytes."""
    found: list[tuple[Attachment, PhotoSize | Document]] = []
    if message.photo:
        largest = message.photo[-1]
        found.append((Attachment(kind="image", name=f"{largest.file_unique_id}.jpg", media_type="image/jpeg",
                                 size=largest.file_size or 0), largest))
    if message.document:
        document = message.document
        media_type = document.mime_type or "application/octet-stream"
        found.append((Attachment(kind="image" if media_type.startswith("image/") else "file",
                                 name=document.file_name or document.file_unique_id, media_type=media_type,
                                 size=document.file_size or 0), document))
    return found


def _attachments(message: Message) -> list[Attachment]:
    return [attachment for attachment, _ in _files(message)]


async def _fetched(message: Message) -> list[Attachment]:
    """The attachments with their bytes (getFile, then the file URL), when small enough; the
    URL holds the bot token, so it is not recorded."""
    fetched = []
    for attachment, item in _files(message):
        if attachment.size <= ATTACHMENT_BYTES:
            try:
                data = bytes(await (await item.get_file()).download_as_bytearray())
            except TelegramError as error:  # the message still goes, with the file by name only
                _log.warning("telegram file not fetched", name=attachment.name, error=str(error))
            else:
                attachment = attachment.model_copy(update={"data_b64": base64.b64encode(data).decode(),
                                                           "size": len(data)})
        fetched.append(attachment)
    return fetched

"""Matrix over matrix-nio: the agent is a bot account in rooms; each room is a conversation.

Inbound: the sync loop, from the sync token saved in the state directory; the token is saved
only after every event of a batch went to ``deliver`` (Temporal has it), so a gateway killed
mid-batch gets the batch again and the conversation drops what it already has; a batch the
homeserver cut short comes with what it left out (channels/matrix_session.py). A first start
begins from now (the rooms' earlier messages are not replayed). A homeserver that fails or
cannot be reached is logged once, as what it is, and synced again with backoff. One that
refuses the access token (a reset server, a revoked token) is logged in to again with the
table's password, and the sync starts from now, as a first start does: the old sync token
means nothing to a new server, and replaying a room's history would answer old messages
again (what was said while the login was refused goes unanswered). Without a password the
channel stops, saying so in one line. Invites from allowed users are joined. Text messages,
images and files (fetched from the media repository, up to ``ATTACHMENT_BYTES``) and
reactions (✅ ❌ 🛑 on the approval message) of allowed users become ``InboundMessage``; any
other message (anyone else's, an edit, another reaction, a kind not read) is dropped with one
log line saying why; the bot's own events are not messages. Notices
(``m.notice``, what bots send) are never answered. A thread (``m.thread``) is a conversation of
its own, as in Slack: the agent answers in it, and a reaction counts for the thread its
message is in.

Outbound: ``m.notice`` messages sent with the message key as the transaction id, so Synapse
posts a retried send once; progress edits its message in place (``m.replace``), and so does the
answer that ends it, unless it needs more than one message: then the progress message is
redacted and the answer posted; the approval
message gets the ✅ and ❌ reactions to tap. The login and the sync token are kept per
homeserver and user (channels/matrix_session.py).

End-to-end encrypted rooms are out of scope: the bot reads and writes unencrypted rooms only.
"""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any, TypeVar

import structlog
from nio import (
    AsyncClient,
    AsyncClientConfig,
    DownloadError,
    InviteMemberEvent,
    LoginResponse,
    ReactionEvent,
    RoomGetEventResponse,
    RoomMessageImage,
    RoomMessageMedia,
    RoomMessageText,
    RoomRedactResponse,
    RoomSendResponse,
    SyncResponse,
)

from channels.base import ATTACHMENT_BYTES, Deliver, RateLimited, code_html, split_text
from channels.config import ChannelConfig
from channels.matrix_session import LoginRefused, MatrixSettings, MatrixState, retried, sync, with_gap
from contracts.attachments import Attachment
from contracts.channels import ChatRef, Delivered, InboundMessage, OutboundMessage

LIMIT = 30_000  # characters per message: well under Synapse's 64 KiB event
SYNC_WAIT_MS = 10_000
REACTIONS = {"✅": "approve", "✔️": "approve", "👍": "approve", "❌": "deny", "👎": "deny", "🛑": "stop"}
BUTTON_KEYS = {"approve": "✅", "deny": "❌", "stop": "🛑"}

_log = structlog.get_logger(__name__)
_Sent = TypeVar("_Sent")


class MatrixAdapter:
    def __init__(self, config: ChannelConfig, state_dir: Path) -> None:
        self.name = config.name
        self.config = config
        self.settings = settings = config.settings(MatrixSettings)
        if not (settings.password or settings.access_token):
            raise ValueError(f"channel [{config.name}]: logging in needs password or access_token")
        self.user_id = settings.user_id
        self.homeserver = settings.homeserver
        self.state = MatrixState(state_dir, self.homeserver, self.user_id)
        self.client = AsyncClient(
            self.homeserver, self.user_id, device_id=settings.device_id or None,
            # Temporal retries a send (waiting out a 429); nio's own retries would stack on it.
            config=AsyncClientConfig(max_limit_exceeded=0, max_timeouts=2, encryption_enabled=False),
        )
        self._logged_in = False
        self._token_refused = False  # the table's access_token: not again once refused

    # ---- inbound ------------------------------------------------------------------

    async def receive(self, deliver: Deliver) -> None:
        while True:
            try:
                await self._login()
                await self._follow(deliver)
            except LoginRefused as err:
                if not self.settings.password:
                    _log.error("matrix refused the access token and the table has no password to log in again;"
                               " the channel stops", channel=self.name, homeserver=self.homeserver, error=str(err))
                    return
                _log.warning("matrix refused the access token; logging in again with the password",
                             channel=self.name, homeserver=self.homeserver, error=str(err))
                self.state.forget()
                self.client.next_batch = ""  # nio syncs from its own last token when given none
                self._logged_in, self._token_refused = False, True

    async def _follow(self, deliver: Deliver) -> None:
        token = self.state.sync_token()
        if token is None:  # a first start: from now on
            first = await sync(self.client, None, 0, self.name)
            await self._join_invites(first)
            token = self.state.save_sync_token(first.next_batch)
        while True:
            batch = await sync(self.client, token, SYNC_WAIT_MS, self.name)
            await self._join_invites(batch)
            for room_id, room in batch.rooms.join.items():
                events = room.timeline.events
                if room.timeline.limited:  # more came than a batch holds: the rest is fetched, not skipped
                    events = await with_gap(self.client, room_id, room.timeline.prev_batch, token, events, self.name)
                for event in events:
                    message = self.normalize(room_id, event)
                    if message is not None:
                        await deliver(await self._completed(message))
            token = self.state.save_sync_token(batch.next_batch)  # only now: Temporal has every message

    def normalize(self, room_id: str, event: Any) -> InboundMessage | None:
        """The person's message ``event`` is, or None. Each message not taken is logged with
        why (one line); the bot's own events and the room's state are not messages."""
        sender = getattr(event, "sender", "")
        if sender == self.user_id:
            return None  # the bot never answers itself
        source = getattr(event, "source", None) or {}
        content = source.get("content") or {}
        thread: str | None = None
        attachments: list[Attachment] = []
        if isinstance(event, ReactionEvent):
            action = REACTIONS.get(event.key) or REACTIONS.get(event.key.replace("\ufe0f", ""))
            text, reply_to = "", event.reacts_to
            if action is None:
                return self._dropped(f"a reaction ({event.key}) that is not ✅ ❌ or 🛑", event, room_id)
        elif isinstance(event, RoomMessageText | RoomMessageMedia):
            relates = content.get("m.relates_to") or {}
            if relates.get("rel_type") == "m.replace":
                return self._dropped("an edit: the message it edits was taken as it was sent", event, room_id)
            action, text, attachments = None, event.body, _attachments(event, content)
            if attachments and content.get("filename", event.body) == event.body:
                text = ""  # a file's body is its name, unless a caption was given
            if relates.get("rel_type") == "m.thread":
                thread = relates.get("event_id")
            reply_to = None if relates.get("is_falling_back") else (relates.get("m.in_reply_to") or {}).get("event_id")
        elif source.get("type") == "m.room.message":
            kind = content.get("msgtype")
            why = ("a notice: what bots send, never answered" if kind == "m.notice"
                   else f"a message of a kind the agent does not read (msgtype {kind!r})")
            return self._dropped(why, event, room_id)
        else:
            return None  # the room's state, redactions, receipts: not messages
        if not self.config.allows(sender):
            return self._dropped("from a user who is not allowed", event, room_id, warn=True)
        return InboundMessage(event_id=event.event_id,
                              chat=ChatRef(channel=self.name, conversation=room_id, thread=thread),
                              author=sender, text=text, reply_to=reply_to, reaction=action, attachments=attachments)

    def _dropped(self, why: str, event: Any, room_id: str, *, warn: bool = False) -> None:
        """One line for a message not handed to a conversation, saying why."""
        log = _log.warning if warn else _log.info
        log(f"ignored a message: {why}", channel=self.name, user=getattr(event, "sender", ""), room=room_id,
            event_id=getattr(event, "event_id", ""))

    async def _completed(self, message: InboundMessage) -> InboundMessage:
        """What ``normalize`` cannot know from the event alone: the thread of the message a
        reaction is on, and the bytes of what was attached."""
        if message.reaction is not None and message.reply_to is not None:
            found = await self.client.room_get_event(message.chat.conversation, message.reply_to)
            relates = found.event.source.get("content", {}).get("m.relates_to") or {} \
                if isinstance(found, RoomGetEventResponse) else {}
            if relates.get("rel_type") == "m.thread":
                chat = message.chat.model_copy(update={"thread": relates.get("event_id")})
                message = message.model_copy(update={"chat": chat})
        if message.attachments:
            message = message.model_copy(update={"attachments": [await self._fetched(a) for a in message.attachments]})
        return message

    async def _fetched(self, attachment: Attachment) -> Attachment:
        """The attachment with its bytes from the media repository, when small enough; a
        failed download is logged and the attachment goes by name and size."""
        if not attachment.url or attachment.size > ATTACHMENT_BYTES:
            return attachment
        response = await self.client.download(attachment.url)
        if isinstance(response, DownloadError) or not isinstance(response.body, bytes):
            _log.warning("matrix file not fetched", channel=self.name, name=attachment.name, error=str(response))
            return attachment
        data = response.body[: ATTACHMENT_BYTES + 1]
        if len(data) > ATTACHMENT_BYTES:
            return attachment.model_copy(update={"size": len(response.body)})
        return attachment.model_copy(update={"data_b64": base64.b64encode(data).decode(), "size": len(data)})

    async def _join_invites(self, batch: SyncResponse) -> None:
        for room_id, info in batch.rooms.invite.items():
            inviter = next((e.sender for e in info.invite_state
                            if isinstance(e, InviteMemberEvent) and e.state_key == self.user_id), None)
            if inviter is not None and self.config.allows(inviter):
                await self.client.join(room_id)
            else:
                _log.warning("ignored an invite from a user who is not allowed", channel=self.name, user=inviter,
                             room=room_id)

    async def _login(self) -> None:
        if self._logged_in:
            return
        saved = self.state.login() or ("", "")
        token = (None if self._token_refused else self.settings.access_token) or saved[0]
        if token:  # the table's, or the one a password login left here
            self.client.access_token = token
            self.client.user_id = self.user_id
            self.client.device_id = self.settings.device_id or saved[1]
        else:
            await self._password_login()
        self._logged_in = True

    async def _password_login(self) -> None:
        """Log in with the table's password until the homeserver takes it: a server just reset
        may not have the account back yet, and a wrong password is one logged line."""
        response = await retried(lambda: self.client.login(self.settings.password, device_name="durable-agent gateway"),
                                 LoginResponse, f"login as {self.user_id}", self.name, refusals=False)
        self.state.save_login(response.access_token, response.device_id)

    # ---- outbound -----------------------------------------------------------------

    async def send(self, message: OutboundMessage) -> Delivered:
        await self._login()
        room = message.chat.conversation
        pieces = split_text(message.text, LIMIT)
        if message.edit_of is not None and message.kind == "answer" and len(pieces) > 1:
            # An answer too long for the progress message it ends: that goes, the answer is posted.
            await self._redact(room, message.edit_of, f"{message.key}.redact")
            message = message.model_copy(update={"edit_of": None})
        if message.edit_of is not None:  # progress, a decision, an answer: the same message, edited in place
            new = _notice(pieces[0])
            content = {**new, "body": f"* {pieces[0]}", "m.new_content": new,
                       "m.relates_to": {"rel_type": "m.replace", "event_id": message.edit_of}}
            await self._send(room, "m.room.message", content, message.key)
            return Delivered(message_ids=[message.edit_of])
        ids = []
        thread = message.chat.thread
        for n, piece in enumerate(pieces):
            content = _notice(piece)
            reply_to = message.reply_to if n == 0 else None
            if thread:  # in the thread; a reply there quotes its message, else falls back to the thread
                content["m.relates_to"] = {"rel_type": "m.thread", "event_id": thread, "is_falling_back": not reply_to,
                                           "m.in_reply_to": {"event_id": reply_to or thread}}
            elif reply_to:
                content["m.relates_to"] = {"m.in_reply_to": {"event_id": reply_to}}
            ids.append(await self._send(room, "m.room.message", content, message.key if n == 0 else f"{message.key}.{n}"))
        for button in message.buttons:  # the reactions to tap, on the (first) message
            key = BUTTON_KEYS[button.action]
            relates = {"rel_type": "m.annotation", "event_id": ids[0], "key": key}
            await self._send(room, "m.reaction", {"m.relates_to": relates}, f"{message.key}.{button.action}")
        return Delivered(message_ids=ids)

    async def _send(self, room: str, kind: str, content: dict, tx_id: str) -> str:
        return _done(await self.client.room_send(room, kind, content, tx_id=tx_id), RoomSendResponse, room).event_id

    async def _redact(self, room: str, event_id: str, tx_id: str) -> None:
        _done(await self.client.room_redact(room, event_id, tx_id=tx_id), RoomRedactResponse, room)

    async def close(self) -> None:
        await self.client.close()


def _done(response: Any, want: type[_Sent], room: str) -> _Sent:
    """``response`` when it is ``want``; a 429 as ``RateLimited`` (Temporal waits it out)."""
    if isinstance(response, want):
        return response
    if response.status_code == "M_LIMIT_EXCEEDED" or getattr(response, "retry_after_ms", None):
        raise RateLimited((response.retry_after_ms or 1000) / 1000)
    raise RuntimeError(f"matrix {want.__name__} in {room} failed: {response}")


def _notice(text: str) -> dict[str, Any]:
    """A notice (what bots send); with code in it, also as HTML, so code shows as code."""
    content: dict[str, Any] = {"msgtype": "m.notice", "body": text}
    if "`" in text:
        content |= {"format": "org.matrix.custom.html", "formatted_body": code_html(text, line_breaks=True)}
    return content


def _attachments(event: Any, content: dict[str, Any]) -> list[Attachment]:
    """What an image or file message carries, by reference (``_fetched`` brings the bytes)."""
    if not isinstance(event, RoomMessageMedia):
        return []
    info = content.get("info") or {}
    name = content.get("filename") or event.body or "file"
    return [Attachment(kind="image" if isinstance(event, RoomMessageImage) else "file", name=name,
                       media_type=info.get("mimetype") or "application/octet-stream",
                       size=int(info.get("size") or 0), url=event.url)]


def adapter(config: ChannelConfig, state_dir: Path) -> MatrixAdapter:
    """The gateway's way in (every channel module has one)."""
    return MatrixAdapter(config, state_dir)

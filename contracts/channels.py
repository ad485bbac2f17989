"""What crosses a Temporal boundary between chat channels and tasks (issue 31).

A platform event (a Matrix room message or reaction, a Slack message or button press, a
Telegram update, a signed webhook call) becomes one ``InboundMessage``; what the agent says
back is one ``OutboundMessage``, sent by an activity. ``ChatRef`` names a conversation:
(channel, conversation, thread) is the key a conversation's session is bound to. The
design, and why: docs/channels.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field


class ChatRef(BaseModel):
    channel: str  # the table name in channels.toml: "matrix", "slack", "telegram", "webhook"
    conversation: str  # a Matrix room id, a Slack channel id, a Telegram chat id, a webhook's conversation
    thread: str | None = None  # a Slack thread's ts, a Telegram topic: a conversation of its own

    @property
    def key(self) -> str:
        return f"{self.channel}:{self.conversation}" + (f":{self.thread}" if self.thread else "")


class Attachment(BaseModel):
    kind: Literal["image", "file"]
    name: str
    media_type: str = "application/octet-stream"
    size: int = 0
    url: str | None = None  # where the gateway fetched it from (platform URL), for the record
    data_b64: str | None = Field(default=None, repr=False)  # the bytes, when small enough to carry


class InboundMessage(BaseModel):
    """One event from a person, normalized. ``event_id`` is the platform's own id (Matrix
    event id, Slack event id or action ts, Telegram update id, the webhook's id): the
    conversation handles each one once, however often it is delivered."""

    event_id: str
    chat: ChatRef
    author: str  # the platform's user id (@alice:example.org, U024BE7LH, 123456789)
    author_name: str = ""
    text: str = ""
    attachments: list[Attachment] = Field(default_factory=list)
    reply_to: str | None = None  # the platform message id this answers or reacts to
    reaction: str | None = None  # an approval button or reaction: "approve", "deny", "stop"
    received_at: datetime | None = None


class Button(BaseModel):
    action: Literal["approve", "deny", "stop"]
    label: str


class OutboundMessage(BaseModel):
    """One message to post, or to edit in place when ``edit_of`` names an earlier one.
    ``key`` is stable across retries of the activity that sends it (the platform's
    transaction id where it has one), so a retry never posts twice."""

    chat: ChatRef
    key: str
    text: str
    kind: Literal["progress", "answer", "question", "approval", "notice"] = "notice"
    edit_of: str | None = None
    buttons: list[Button] = Field(default_factory=list)
    reply_to: str | None = None


class Delivered(BaseModel):
    message_ids: list[str]  # the platform's ids of what was posted (several when split at the limit)

"""The gateway's console: one line per inbound message, handed over or dropped.

Each message a person sends gets one INFO line saying where it came from (channel and chat),
who sent it, the start of what they said (or the button they pressed) and what became of it:
the conversation it went to, or why it was dropped. ``starter.py gateway`` shows these lines
on its stderr (runtime/logs.py renders them); secrets are redacted there as in every log line.
"""

from __future__ import annotations

import re

import structlog

from contracts.channels import InboundMessage

PREVIEW_CHARS = 60

_log = structlog.get_logger("channels.console")


def handed_over(message: InboundMessage, conversation: str) -> None:
    _log.info(f"message handed over: {described(message)} → {conversation}", event_id=message.event_id)


def dropped(message: InboundMessage, why: str) -> None:
    _log.info(f"message dropped: {described(message)} ({why})", event_id=message.event_id)


def described(message: InboundMessage) -> str:
    """Channel and chat, sender, and the start of the text (or the button, or the files)."""
    who = message.author
    if message.author_name and message.author_name != message.author:
        who = f"{message.author_name} ({message.author})"
    return f"{message.chat.key} · {who} · {said(message)}"


def said(message: InboundMessage) -> str:
    if message.reaction:
        return f"pressed {message.reaction}"
    text = re.sub(r"\s+", " ", message.text).strip()
    if len(text) > PREVIEW_CHARS:
        text = text[: PREVIEW_CHARS - 1].rstrip() + "…"
    files = f" + {len(message.attachments)} file(s)" if message.attachments else ""
    return (f"“{text}”" if text else "(no text)") + files

"""What every channel adapter provides: a loop that turns platform events into
``InboundMessage`` and a way to post ``OutboundMessage`` (contracts/channels.py).

An adapter is built on the platform's kept client library (matrix-nio, slack_sdk,
python-telegram-bot), never hand-written HTTP. ``receive`` calls ``deliver`` for each event
and commits the platform's position (sync token, update offset, event ack) only after
``deliver`` returns, that is after Temporal has the message; ``send`` is what the outbound
activity calls, splitting at the platform's limit and raising ``RateLimited`` on a 429 so
that Temporal's retry waits it out.
"""

from __future__ import annotations

import html
import re
from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from contracts.attachments import Attachment
from contracts.channels import Delivered, InboundMessage, OutboundMessage

Deliver = Callable[[InboundMessage], Awaitable[None]]

# A file or image a person posts travels in the message (``Attachment.data_b64``) up to this
# size, and a message's attachments up to this much together: the message is one Temporal
# payload (2 MB at most, and base64 takes a third more). The rest go by name and size only.
ATTACHMENT_BYTES = 1_000_000


class RateLimited(Exception):
    """The platform answered 429; ``retry_after_s`` is what it asked for."""

    def __init__(self, retry_after_s: float, message: str = "") -> None:
        super().__init__(message or f"rate limited: retry after {retry_after_s:g} s")
        self.retry_after_s = retry_after_s


class Adapter(Protocol):
    name: str  # the channel: its table name in channels.toml

    async def receive(self, deliver: Deliver) -> None:
        """Run until cancelled: each platform event from an allowed person, normalized, goes to
        ``deliver``; the platform's position moves on only after ``deliver`` returns."""
        ...

    async def send(self, message: OutboundMessage) -> Delivered:
        """Post (or edit) ``message``; the same ``message.key`` twice posts once where the
        platform allows it."""
        ...

    async def close(self) -> None: ...


@runtime_checkable
class FetchesLater(Protocol):
    """An adapter that hands a message over before its files' bytes (Slack: its events must be
    answered within 3 s); the conversation has the gateway fetch them afterwards."""

    async def fetched(self, attachment: Attachment) -> Attachment:
        """``attachment`` with its bytes and without its ``file_id``; by name and size only
        when too large or not fetched."""
        ...


def within_limit(attachments: list[Attachment]) -> list[Attachment]:
    """The attachments with their bytes while they fit in ``ATTACHMENT_BYTES`` together, in
    order; those after go by name and size (the task is told they did not arrive)."""
    room, out = ATTACHMENT_BYTES, []
    for attachment in attachments:
        data = attachment.data_b64 or ""
        size = len(data) * 3 // 4 - data[-2:].count("=")  # the bytes the base64 holds
        if attachment.data_b64 is not None and size > room:
            attachment = attachment.model_copy(update={"data_b64": None, "size": max(attachment.size, size)})
        room -= size if attachment.data_b64 is not None else 0
        out.append(attachment)
    return out


def split_text(text: str, limit: int) -> list[str]:
    """``text`` in pieces of at most ``limit`` characters, cut at a paragraph, then a line,
    then a space where one is near; a code fence cut in two is closed and reopened."""
    pieces: list[str] = []
    rest = text
    while len(rest) > limit:
        window = rest[:limit]
        cut = next((at for sep in ("\n\n", "\n", " ") if (at := window.rfind(sep)) >= limit // 2), limit)
        piece, rest = rest[:cut], rest[cut:].lstrip("\n ")
        if piece.count("```") % 2:  # a code block runs on: close it here, reopen it there
            if len(piece) + 4 > limit:
                piece, rest = piece[: limit - 4], piece[limit - 4:] + rest
            piece += "\n```"
            rest = "```\n" + rest
        pieces.append(piece)
    if rest or not pieces:
        pieces.append(rest)
    return pieces


_FENCE = re.compile(r"```([\w+.-]*)\n?(.*?)```", re.S)
_INLINE = re.compile(r"`([^`\n]+)`")


def code_html(text: str, *, line_breaks: bool = False) -> str:
    """``text`` in the HTML both Telegram and Matrix take, so code shows as code: a fenced
    block as ``<pre><code>`` (its language as the class), inline code as ``<code>``, the rest
    escaped; ``line_breaks``: newlines outside code as ``<br/>`` (Matrix's HTML ignores them)."""
    out, at = [], 0
    for fence in _FENCE.finditer(text):
        out.append(_inline_html(text[at:fence.start()], line_breaks))
        language = f' class="language-{fence.group(1)}"' if fence.group(1) else ""
        out.append(f"<pre><code{language}>{html.escape(fence.group(2).rstrip(chr(10)), quote=False)}</code></pre>")
        at = fence.end()
    out.append(_inline_html(text[at:], line_breaks))
    return "".join(out)


def _inline_html(text: str, line_breaks: bool) -> str:
    out, at = [], 0
    for code in _INLINE.finditer(text):
        out += [html.escape(text[at:code.start()], quote=False), f"<code>{html.escape(code.group(1), quote=False)}</code>"]
        at = code.end()
    out.append(html.escape(text[at:], quote=False))
    joined = "".join(out)
    return joined.replace("\n", "<br/>") if line_breaks else joined

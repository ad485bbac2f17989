"""The task's context: typed entries appended through one method.

Seed 000's three-way principle on Temporal: an entry appended here is
(1) derived only from recorded activity results and signals, so it is in the
workflow history, (2) what watchers read through the ``events`` query, and
(3) what ``to_chat_messages`` turns into the model's view. There is no other
write path, so the three cannot differ.

Pure and deterministic: no I/O, no clocks.
"""

from __future__ import annotations

import hashlib
from typing import Annotated, Literal

from pydantic import BaseModel, Field

from core.lean import omitted, omitted_empty
from core.messages import ChatMessage, Thinking, ToolCallRequest
from core.tool_outcome import ImageRef, ToolOutcome


class _Entry(BaseModel):
    seq: int = -1  # position in the transcript, assigned by Transcript.append
    turn: int = 0  # the LLM call (iteration) that produced or preceded it


class UserMessage(_Entry):
    kind: Literal["user_message"] = "user_message"
    text: str
    # Images the person sent with it (a chat attachment): references, never the bytes. Left
    # out of the JSON when empty, so the digests of entries stored before it are unchanged.
    images: list[ImageRef] = omitted_empty(list)


class AiMessage(_Entry):
    """Assistant text without a tool call (kept so the model sees what it said)."""

    kind: Literal["ai_message"] = "ai_message"
    text: str
    # The model's reasoning as typed parts; a string recorded by older code is read too.
    thinking: Thinking = Field(default_factory=list)


class ToolCall(_Entry):
    """The assistant's turn that called tools. Only the first call is executed."""

    kind: Literal["tool_call"] = "tool_call"
    text: str = ""
    calls: list[ToolCallRequest]
    # The model's reasoning as typed parts; a string recorded by older code is read too.
    thinking: Thinking = Field(default_factory=list)


class ToolResult(_Entry):
    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str
    content: str
    status: Literal["ok", "error", "retry", "deferred", "interrupted"] = "ok"
    final_result: str | None = None
    info: str | None = None
    truncated: bool = False
    exit_code: int | None = None
    ask: str | None = None
    # A large output lives in the context store as a blob; ``content`` is then a preview.
    blob: str | None = None
    full_chars: int | None = None
    # An image the call produced: its blob digest and size, never the bytes (see ImageRef).
    # Left out of the JSON when None, so the digests of entries stored before it are unchanged.
    image: ImageRef | None = omitted()


class SystemReminder(_Entry):
    """An engine note to the model; the model sees it as a user message."""

    kind: Literal["system_reminder"] = "system_reminder"
    text: str
    reason: str = ""


class StatusNotice(_Entry):
    """Status for people watching (retrying, stopped, failed, compacted). Not sent to the model."""

    kind: Literal["status_notice"] = "status_notice"
    text: str
    reason: str = ""


Entry = Annotated[
    UserMessage | AiMessage | ToolCall | ToolResult | SystemReminder | StatusNotice,
    Field(discriminator="kind"),
]


class Transcript:
    """The one append path for context entries.

    After a continue-as-new the transcript holds only entries from ``base`` on;
    the earlier ones are in the context store (and in the earlier runs' histories).
    """

    def __init__(self, entries: list[Entry] | None = None, base: int = 0) -> None:
        self.base = base
        # The list given is the one appended to (the loop state's own), never a copy.
        self.entries: list[Entry] = entries if entries is not None else []

    @property
    def total(self) -> int:
        return self.base + len(self.entries)

    def append(self, entry: Entry) -> Entry:
        entry.seq = self.total
        self.entries.append(entry)
        return entry

    def since(self, seq: int) -> list[Entry]:
        return self.entries[max(seq - self.base, 0):]


def to_chat_messages(entries: list[Entry]) -> list[ChatMessage]:
    messages: list[ChatMessage] = []
    for entry in entries:
        match entry:
            case UserMessage():
                messages.append(ChatMessage(role="user", content=entry.text))
            case AiMessage():
                messages.append(
                    ChatMessage(role="assistant", content=entry.text, thinking=entry.thinking)
                )
            case ToolCall():
                messages.append(
                    ChatMessage(
                        role="assistant",
                        content=entry.text,
                        tool_calls=entry.calls,
                        thinking=entry.thinking,
                    )
                )
            case ToolResult():
                messages.append(
                    ChatMessage(
                        role="tool",
                        content=entry.content,
                        tool_call_id=entry.call_id,
                        name=entry.name,
                    )
                )
            case SystemReminder():
                messages.append(
                    ChatMessage(
                        role="user", content=f"<system-reminder>{entry.text}</system-reminder>"
                    )
                )
            case StatusNotice():
                pass
    return messages


def entry_digest(entry: Entry) -> str:
    """A stable fingerprint of an entry, used to verify what the context store holds."""
    # 64 bits: it tells a stale or foreign entry from the right one, not an adversary's.
    return hashlib.sha256(entry.model_dump_json().encode("utf-8", "surrogatepass")).hexdigest()[:16]


def result_entry(call_id: str, name: str, result: ToolOutcome, *, seq: int, turn: int) -> ToolResult:
    """The ToolResult entry for a tool's result: built the same way by the tool activity
    (which stores it) and by the workflow (which records it), so their digests agree."""
    return ToolResult(
        seq=seq,
        turn=turn,
        call_id=call_id,
        name=name,
        content=result.content,
        status=result.status,
        final_result=result.final_result,
        info=result.info,
        truncated=result.truncated,
        exit_code=result.exit_code,
        ask=result.ask,
        blob=result.blob,
        full_chars=result.full_chars,
        image=result.image,
    )

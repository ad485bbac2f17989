"""What a tool call comes to: its danger level and the declarative outcome of running it.

A handler returns a ``ToolOutcome``; it never writes to the history or decides the next
step. The engine reads what the outcome declares (done with a final result, asking the
user, a new plan) and acts on it. Named apart from ``core.entries.ToolResult``, the
context entry the engine records for it.
"""

from __future__ import annotations

from enum import Enum
from typing import Literal

from pydantic import BaseModel, Field

from core.lean import omitted
from core.tool_args import PlanItem


class Danger(str, Enum):
    SAFE = "safe"
    MODERATE = "moderate"
    DANGEROUS = "dangerous"


# The largest image a tool hands to the model (bytes, before base64): a screenshot over it is
# taken again as a smaller JPEG; an image file over it is described, not sent.
MAX_IMAGE_BYTES = 1_500_000


class ImageRef(BaseModel):
    """An image a tool produced (a screenshot, an image file read): the history keeps this
    reference and the result's text preview, never the bytes. The bytes live in the context
    store as a blob (base64 text) under ``digest``; the LLM activity sends them to a model
    that takes images.

    ``data`` (base64) is set by a handler and carried only as far as the tool activity,
    which stores it and sets ``digest``: it is excluded from every serialization, so the
    bytes never reach the history even if a caller forgot to strip them."""

    media_type: str  # image/png, image/jpeg, image/gif or image/webp
    digest: str = ""
    size: int = 0  # bytes of the image
    width: int | None = None
    height: int | None = None
    data: str | None = Field(default=None, exclude=True)


class BrowserState(BaseModel):
    """What the workflow records of a task's browser: its tabs' URLs and the active one.
    After a worker crash (or an idle close) the next browser call reopens these URLs on
    whichever worker runs it and tells the model so."""

    tabs: list[str] = Field(default_factory=list)
    active: int = 0

    @property
    def open(self) -> bool:
        return bool(self.tabs)

    @property
    def url(self) -> str | None:
        return self.tabs[self.active] if 0 <= self.active < len(self.tabs) else None


class ToolOutcome(BaseModel):
    """The declarative outcome of one tool call.

    status: ``ok`` (done), ``error`` (failed; the model reads ``content`` and
    can recover), ``retry`` (the call was malformed; ``content`` is a hint).
    ``final_result`` set means the task is complete with that text.
    ``ask`` set means the model is asking the user and waits for a reply.
    ``plan`` set means the task's plan is now this list.
    """

    status: Literal["ok", "error", "retry"] = omitted("ok")
    content: str
    final_result: str | None = omitted()
    ask: str | None = omitted()
    info: str | None = omitted()  # a message to the user that does not end the task
    summary: str | None = omitted()  # one-line compact summary, if the tool wants its own
    truncated: bool = omitted(False)
    exit_code: int | None = omitted()
    plan: list[PlanItem] | None = omitted()
    # Set by the tool activity, not by handlers: the stored result entry's digest, and
    # for a large output the blob holding it in full (``content`` is then a preview).
    stored_digest: str | None = omitted()
    blob: str | None = omitted()
    full_chars: int | None = omitted()
    # Set by the tool activity after an MCP call when the server's tool list is no longer the
    # one the task listed (it said tools/list_changed, or came back different): list again.
    tools_changed: bool = omitted(False)
    # An image the call produced (see ImageRef), and the browser's state after a browser
    # call (None: the call did not touch the browser).
    image: ImageRef | None = omitted()
    browser: BrowserState | None = omitted()

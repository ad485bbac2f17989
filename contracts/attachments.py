"""Files and images a person sends with a message (a chat attachment), on their way to a task.

An ``Attachment`` comes in with the chat message (channels fetch its bytes; Slack, which
must be answered within 3 s, hands over the file id and the conversation has the gateway
fetch the bytes afterwards: ``FETCH_ATTACHMENTS_ACTIVITY``), rides the task's input or an interjection, and is saved by one activity on the workers
(``SAVE_ATTACHMENTS_ACTIVITY``): every attachment becomes a file under the task's workspace
(``attachments/``), and an image is also stored in the context store, so the message that
brought it shows it to a model that takes images (``ImageRef``, as a tool's image is).
Only ``Saved`` (paths and references, never bytes) enters the task's context.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from core.lean import omitted
from core.tool_outcome import ImageRef

SAVE_ATTACHMENTS_ACTIVITY = "save_attachments"
FETCH_ATTACHMENTS_ACTIVITY = "fetch_attachments"  # on the gateway, which has the channels' tokens
ATTACHMENTS_DIR = "attachments"  # under the workspace


class Attachment(BaseModel):
    kind: Literal["image", "file"]
    name: str
    media_type: str = "application/octet-stream"
    size: int = 0
    url: str | None = None  # where the gateway fetched it from (platform URL), for the record
    data_b64: str | None = Field(default=None, repr=False)  # the bytes, when small enough to carry
    file_id: str | None = omitted()  # the platform's file whose bytes are still to be fetched (Slack), else None


class FetchAttachments(BaseModel):
    """The attachments of a message from ``channel``, some still to be fetched (``file_id``)."""

    channel: str
    attachments: list[Attachment]


class SaveAttachments(BaseModel):
    workspace: str
    attachments: list[Attachment]


class Saved(BaseModel):
    """One attachment as the task has it: ``path`` relative to the workspace (None when its
    bytes did not come: too large for a message), ``image`` when the model can be shown it."""

    name: str
    path: str | None = None
    size: int = 0
    image: ImageRef | None = None
    problem: str | None = None  # why it is not in the workspace
    # What a file that is not text holds ("gzip-compressed data"; core.binary), so the model
    # knows before it tries to read it, whatever type the chat declared. None: text, or an image.
    binary: str | None = omitted()


def attachments_note(saved: list[Saved]) -> str:
    """The line the message gets, so the model knows what came with it and where it is."""
    parts = []
    for item in saved:
        if item.path is None:
            parts.append(f"{item.name} (not received: {item.problem})")
        else:
            shown = ", shown below" if item.image is not None else f", {item.binary}, not text" if item.binary else ""
            parts.append(f"{item.path} ({item.size:,} bytes{shown})")
    return "[attached: " + "; ".join(parts) + "]"

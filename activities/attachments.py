"""Saving what a person attached to a message (``contracts/attachments.py``) where the task can
use it: each file under the workspace's ``attachments/`` directory, each image also in the
context store so the message shows it to a model that takes images.

On the workers, because the workspace is theirs (a gateway may run on another host). Written
through ``tools.beneath`` (no symlink followed, nothing outside the workspace), under a name
cleaned of any path; a retried activity finds its own file (same bytes) and reuses it, and a
different file of the same name gets a numbered name beside it.
"""

from __future__ import annotations

import base64
import binascii
import os
import re

from temporalio import activity

from contracts.attachments import ATTACHMENTS_DIR, SAVE_ATTACHMENTS_ACTIVITY, Attachment, SaveAttachments, Saved
from core.binary import SNIFF_BYTES, binary_kind
from core.images import image_dimensions, sniff_image_type
from core.tool_outcome import MAX_IMAGE_BYTES, ImageRef
from runtime.store import ContextStore, Store, as_store
from tools.beneath import DIR_FLAGS, Refused, open_at

MAX_NAME = 100


def clean_name(name: str) -> str:
    """A file name with no path, no leading dot and only plain characters."""
    base = re.sub(r"[^A-Za-z0-9._ -]", "_", name.replace("\\", "/").rsplit("/", 1)[-1]).strip(" .")
    return base[-MAX_NAME:] or "attachment"


class AttachmentActivities:
    def __init__(self, store: Store | ContextStore) -> None:
        self.store = as_store(store)

    @activity.defn(name=SAVE_ATTACHMENTS_ACTIVITY)
    async def save_attachments(self, request: SaveAttachments) -> list[Saved]:
        return [await self._save(request.workspace, a) for a in request.attachments]

    async def _save(self, workspace: str, attachment: Attachment) -> Saved:
        name = clean_name(attachment.name)
        if attachment.data_b64 is None:
            return Saved(name=name, size=attachment.size,
                         problem=f"{attachment.size:,} bytes is over what a chat message carries")
        try:
            data = base64.b64decode(attachment.data_b64, validate=True)
        except (binascii.Error, ValueError):
            return Saved(name=name, problem="its data was not valid base64")
        path = f"{ATTACHMENTS_DIR}/{_write(workspace, name, data)}"
        media_type = sniff_image_type(data[:16]) if attachment.kind == "image" else None
        image = None
        if media_type is not None and len(data) <= MAX_IMAGE_BYTES:
            size = image_dimensions(data, media_type)
            image = ImageRef(media_type=media_type, size=len(data), width=size[0] if size else None,
                             height=size[1] if size else None,
                             digest=await self.store.put_blob(base64.b64encode(data).decode("ascii")))
        binary = None if image is not None else binary_kind(data[:SNIFF_BYTES])
        return Saved(name=name, path=path, size=len(data), image=image, binary=binary)


def _write(workspace: str, name: str, data: bytes) -> str:
    """Write ``data`` as ``attachments/name`` (or ``name-N``) in ``workspace``; the name used."""
    root = os.open(workspace, DIR_FLAGS)
    try:
        try:
            os.mkdir(ATTACHMENTS_DIR, 0o755, dir_fd=root)
        except FileExistsError:
            pass
        folder = open_at(root, ATTACHMENTS_DIR, DIR_FLAGS, shown=ATTACHMENTS_DIR)
    finally:
        os.close(root)
    try:
        stem, dot, ext = name.rpartition(".") if "." in name else (name, "", "")
        for n in range(1000):
            candidate = name if n == 0 else f"{stem}-{n}{dot}{ext}"
            try:
                fd = open_at(folder, candidate, os.O_WRONLY | os.O_CREAT | os.O_EXCL, shown=candidate)
            except FileExistsError:
                if _same(folder, candidate, data):
                    return candidate  # a retry: this attachment is already here
                continue
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            return candidate
        raise FileExistsError(f"too many attachments named {name}")
    finally:
        os.close(folder)


def _same(folder: int, name: str, data: bytes) -> bool:
    try:
        fd = open_at(folder, name, os.O_RDONLY, shown=name)
    except (OSError, Refused):  # gone, or a symlink put there: not ours
        return False
    with os.fdopen(fd, "rb") as f:
        return f.read(len(data) + 1) == data

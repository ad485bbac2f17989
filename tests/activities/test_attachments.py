"""The attachment activity: a file that is not text, whatever type the chat declared, is
named by what it is and its size in the note the model reads (issue 41); it is never decoded
into the context."""

from __future__ import annotations

import base64
import gzip

from activities.attachments import AttachmentActivities
from contracts.attachments import Attachment, SaveAttachments, attachments_note
from runtime.store import ContextStore


async def test_a_compressed_file_sent_as_text_is_named_by_type_and_size(tmp_path):
    packed = gzip.compress(b"a,b\n1,2\n" * 1000)
    sent = [Attachment(kind="file", name="data.csv", media_type="text/csv", data_b64=base64.b64encode(packed).decode()),
            Attachment(kind="file", name="notes.txt", media_type="text/plain", data_b64=base64.b64encode(b"hi\n").decode())]
    saved = await AttachmentActivities(ContextStore(tmp_path / "c.db")).save_attachments(
        SaveAttachments(workspace=str(tmp_path), attachments=sent))
    assert [s.binary for s in saved] == ["gzip-compressed data", None]
    assert attachments_note(saved) == (f"[attached: attachments/data.csv ({len(packed):,} bytes, gzip-compressed data, "
                                       "not text); attachments/notes.txt (3 bytes)]")

"""What the ``shell`` tool keeps of a command's output, and how it is cut for the model.

Split from ``tools/shell.py`` (which runs and supervises the command) so each stays one
concept under 300 lines. Output is kept as it comes, at most ``HEAD_BYTES`` + ``TAIL_BYTES``
of it, so a flood cannot exhaust memory; the model sees at most ``OUTPUT_CAP_CHARS``
characters (the first and last half, a ``[... N characters truncated ...]`` line between),
with secrets redacted before the cut so one straddling it never shows in part.
"""

from __future__ import annotations

from collections.abc import Callable

OUTPUT_CAP_CHARS = 20_000
_HALF = OUTPUT_CAP_CHARS // 2
# Kept beyond each half, so secrets are redacted in whole before the cut: a secret of up to
# REDACT_MARGIN_BYTES / 4 characters that straddles a cut is never shown in part.
REDACT_MARGIN_BYTES = 16 * 1024
# A UTF-8 character is at most 4 bytes, so these always hold a full half (and the margin).
HEAD_BYTES = 4 * _HALF + 16 + REDACT_MARGIN_BYTES
TAIL_BYTES = 4 * _HALF + 16 + REDACT_MARGIN_BYTES
PROGRESS_CHARS = 2000  # the output tail a heartbeat carries, for a retry after a crash


class _Capture:
    """Keeps the first HEAD_BYTES and a rolling last TAIL_BYTES of a stream."""

    def __init__(self) -> None:
        self.head = bytearray()
        self.tail = bytearray()
        self.dropped = 0  # bytes between head and tail that were not kept

    def feed(self, chunk: bytes) -> None:
        room = HEAD_BYTES - len(self.head)
        if room > 0:
            self.head += chunk[:room]
            chunk = chunk[room:]
        if not chunk:
            return
        self.tail += chunk
        excess = len(self.tail) - TAIL_BYTES
        if excess > 0:
            del self.tail[:excess]
            self.dropped += excess

    def tail_text(self, chars: int = PROGRESS_CHARS) -> str:
        kept = self.tail if self.tail else self.head
        return bytes(kept[-4 * chars:]).decode("utf-8", errors="replace")[-chars:]

    def render(self, redact: Callable[[str], str] = lambda text: text) -> tuple[str, bool]:
        """The output as text within OUTPUT_CAP_CHARS, and whether it was cut. Secrets are
        redacted before the cut."""
        if not self.dropped:
            text = redact((self.head + self.tail).decode("utf-8", errors="replace"))
            if len(text) <= OUTPUT_CAP_CHARS:
                return text, False
            return _join(text[:_HALF], len(text) - 2 * _HALF, text[-_HALF:]), True
        head = redact(self.head.decode("utf-8", errors="replace"))
        tail = redact(self.tail.decode("utf-8", errors="replace"))
        # The dropped middle is counted in bytes: exact for ASCII, close enough otherwise.
        cut = len(head) - _HALF + self.dropped + len(tail) - _HALF
        return _join(head[:_HALF], cut, tail[-_HALF:]), True


def _join(head: str, cut: int, tail: str) -> str:
    return f"{head}\n[... {cut} characters truncated ...]\n{tail}"

"""The file tool's five actions (read, write, edit, list, grep), on a path already resolved
beneath the workspace; the tool itself (arguments, dispatch, danger) is ``tools.file``.

Each opens what it touches through ``tools.beneath``, so a symlink swapped in after the
check is refused; writes and edits through a symlink are refused outright. Text output is
capped at ``OUTPUT_CAP_CHARS`` like the shell tool's.

Reading a PNG, JPEG, GIF or WebP file (known by its first bytes, whatever its name) gives
the image itself: ``ToolOutcome.image`` with the bytes (base64), which the tool activity
stores and the LLM activity shows to a model that takes images; the text says what it is
(``Image logo.png: image/png, 640x480, 52 KB``), which is all a text-only model sees. An
image over ``MAX_IMAGE_BYTES`` is described only. Other binary files are refused.
"""

from __future__ import annotations

import base64
import io
import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from core.binary import SNIFF_BYTES, binary_kind, size_text
from core.images import image_dimensions, sniff_image_type
from core.tool_outcome import MAX_IMAGE_BYTES, ImageRef
from tools.base import ToolOutcome
from tools.beneath import DIR_FLAGS, Refused, open_beneath, open_file, refuse_symlink
from tools.shell import OUTPUT_CAP_CHARS

MAX_LIST_ENTRIES = 1000
MAX_GREP_MATCHES = 200
MAX_GREP_LINE_CHARS = 500
IMAGE_HEADER_BYTES = 64 * 1024  # where an image too large to send is looked for its size


def _binary_kind(f: BinaryIO) -> str | None:
    """What the file is when it is not text (``core.binary``): a gzip or a binary saved with
    a text name is named, not decoded into the context."""
    kind = binary_kind(f.read(SNIFF_BYTES), "utf-8")  # read as UTF-8: bad bytes become U+FFFD
    f.seek(0)
    return kind


def _existing_file(path: Path, raw: str) -> None:
    if not path.exists():
        raise Refused(f"no such file: {raw}")
    if path.is_dir():
        raise Refused(f"{raw!r} is a directory; use action 'list'")


def _human_size(size: int) -> str:
    if size < 1024:
        return f"{size} bytes"
    if size < 1024 * 1024:
        return f"{round(size / 1024)} KB"
    return f"{size / (1024 * 1024):.1f} MB"


def _read_image(f: BinaryIO, raw: str) -> ToolOutcome | None:
    """The image in ``f`` (a PNG, JPEG, GIF or WebP by its first bytes), or None for any other
    file. Over ``MAX_IMAGE_BYTES`` it is described only: the model cannot be sent it."""
    media_type = sniff_image_type(f.read(16))
    f.seek(0)
    if media_type is None:
        return None
    data = f.read(MAX_IMAGE_BYTES + 1)  # read once: the file may grow while it is read
    size = max(len(data), os.fstat(f.fileno()).st_size)
    dimensions = image_dimensions(data[:IMAGE_HEADER_BYTES], media_type)
    shown = f"{dimensions[0]}x{dimensions[1]}, " if dimensions else ""
    text = f"Image {printable(raw)}: {media_type}, {shown}{_human_size(size)}"
    if size > MAX_IMAGE_BYTES:
        return ToolOutcome(content=f"{text}: too large to show (over {_human_size(MAX_IMAGE_BYTES)}); "
                           "a smaller copy (scaled down, or as a JPEG) can be read")
    width, height = dimensions or (None, None)
    image = ImageRef(media_type=media_type, size=size, width=width, height=height,
                     data=base64.b64encode(data).decode("ascii"))
    return ToolOutcome(content=text, image=image)


def read_file(root: Path, path: Path, raw: str, offset: int | None, limit: int | None) -> ToolOutcome:
    _existing_file(path, raw)
    first = offset or 1
    stop = first + limit if limit else None  # first line not wanted
    parts: list[str] = []
    size, last, total, cut = 0, first - 1, 0, False
    with open_file(root, path, raw, "rb") as raw_file:
        image = _read_image(raw_file, raw)
        if image is not None:
            return image
        if kind := _binary_kind(raw_file):
            size = size_text(os.fstat(raw_file.fileno()).st_size)
            raise Refused(f"{raw!r} is a binary file ({kind}, {size}); it cannot be read as text")
        f = io.TextIOWrapper(raw_file, encoding="utf-8", errors="replace", newline="")
        for total, line in enumerate(f, 1):  # read on to count the lines
            if total < first or (stop and total >= stop) or cut:
                continue
            if size + len(line) > OUTPUT_CAP_CHARS:
                cut = True
                if last < first:  # the very first line is over the cap
                    parts.append(line[:OUTPUT_CAP_CHARS])
                continue
            parts.append(line)
            size += len(line)
            last = total
    if total and first > total:
        raise Refused(f"offset {first} is past the end of {raw!r} ({total} lines)")
    text = "".join(parts)
    if not cut:
        return ToolOutcome(content=text or "(empty file)")
    if last < first:  # a single line longer than the cap
        note = f"[line {first} is longer than {OUTPUT_CAP_CHARS} characters and was cut]"
    else:
        note = (
            f"[output capped at {OUTPUT_CAP_CHARS} characters: showed lines {first}-{last} "
            f"of {total}; use offset={last + 1} (and limit) to read on]"
        )
    text = text.rstrip("\n")
    return ToolOutcome(content=f"{text}\n{note}", truncated=True)


def write_file(root: Path, path: Path, raw: str, content: str) -> ToolOutcome:
    if path.is_dir():
        raise Refused(f"{raw!r} is a directory")
    refuse_symlink(root, raw)
    data = content.encode("utf-8")
    flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC
    with os.fdopen(open_beneath(root, path, raw, flags, make_parents=True), "wb") as f:
        f.write(data)
    return ToolOutcome(content=f"Wrote {len(data)} bytes to {raw}.")


def edit_file(root: Path, path: Path, raw: str, old: str, new: str, replace_all: bool) -> ToolOutcome:
    _existing_file(path, raw)
    if not old:
        raise Refused("old must not be empty")
    refuse_symlink(root, raw)
    with open_file(root, path, raw, "r+b") as f:  # one open for the read and the write
        try:
            text = f.read().decode("utf-8")
        except UnicodeDecodeError:
            raise Refused(f"{raw!r} is not UTF-8 text; it cannot be edited") from None
        count = text.count(old)
        if count == 0:
            raise Refused(f"old string not found in {raw}; it must match exactly, whitespace included")
        if count > 1 and not replace_all:
            raise Refused(
                f"old string found {count} times in {raw}; include more context to make it unique, "
                "or set replace_all to true"
            )
        f.seek(0)
        f.write(text.replace(old, new).encode("utf-8"))
        f.truncate()
    return ToolOutcome(content=f"Made {count} replacement{'s' if count > 1 else ''} in {raw}.")


def list_dir(root: Path, path: Path, raw: str) -> ToolOutcome:
    if not path.exists():
        raise Refused(f"no such directory: {raw}")
    if not path.is_dir():
        raise Refused(f"{raw!r} is not a directory; use action 'read'")
    fd = open_beneath(root, path, raw, DIR_FLAGS)
    try:
        with os.scandir(fd) as it:
            entries = sorted(printable(e.name) + ("/" if e.is_dir() else "") for e in it)
    finally:
        os.close(fd)
    if not entries:
        return ToolOutcome(content="(empty directory)")
    lines = entries[:MAX_LIST_ENTRIES]
    if len(entries) > MAX_LIST_ENTRIES:
        lines.append(f"[... {len(entries) - MAX_LIST_ENTRIES} more entries not shown]")
    return _capped("\n".join(lines), truncated=len(entries) > MAX_LIST_ENTRIES)


def _files_under(root: Path, start: Path) -> Iterator[Path]:
    if start.is_file():
        yield start
        return
    for dirpath, dirnames, filenames in os.walk(start):
        dirnames[:] = sorted(d for d in dirnames if d != ".git")
        for name in sorted(filenames):
            path = Path(dirpath, name)
            # A symlink inside the tree may point out of the workspace.
            if path.resolve().is_relative_to(root) and path.is_file():
                yield path


def grep(root: Path, path: Path, raw: str, pattern: str) -> ToolOutcome:
    try:
        regex = re.compile(pattern)
    except re.error as exc:
        raise Refused(f"invalid regex {pattern!r}: {exc}") from None
    if not path.exists():
        raise Refused(f"no such file or directory: {raw}")
    matches: list[str] = []
    for file in _files_under(root, path):
        try:
            with open_file(root, file.resolve(), str(file), "rb") as raw_file:
                if _binary_kind(raw_file):
                    continue
                f = io.TextIOWrapper(raw_file, encoding="utf-8", errors="replace")
                for lineno, line in enumerate(f, 1):
                    if regex.search(line):
                        matches.append(f"{_shown(file, root)}:{lineno}:{_clip(line.rstrip())}")
                        if len(matches) > MAX_GREP_MATCHES:
                            break
        except (OSError, Refused):
            continue
        if len(matches) > MAX_GREP_MATCHES:
            break
    if not matches:
        return ToolOutcome(content=f"no matches for {pattern!r} in {raw}")
    over = len(matches) > MAX_GREP_MATCHES
    if over:
        matches[MAX_GREP_MATCHES:] = [
            f"[stopped at {MAX_GREP_MATCHES} matches; narrow the pattern or the path]"
        ]
    return _capped("\n".join(matches), truncated=over)


def _shown(path: Path, root: Path) -> str:
    try:
        return printable(str(path.relative_to(root)))
    except ValueError:
        return printable(str(path))


def printable(name: str) -> str:
    """A file name as text: bytes that are not UTF-8 (kept by Python as lone surrogates, which
    no JSON payload can carry) are shown escaped, e.g. ``bad\\xff.txt``."""
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _clip(line: str) -> str:
    return line if len(line) <= MAX_GREP_LINE_CHARS else line[:MAX_GREP_LINE_CHARS] + "…"


def _capped(text: str, *, truncated: bool) -> ToolOutcome:
    if len(text) <= OUTPUT_CAP_CHARS:
        return ToolOutcome(content=text, truncated=truncated)
    cut = len(text) - OUTPUT_CAP_CHARS
    note = f"[... {cut} more characters not shown; narrow the request]"
    return ToolOutcome(content=f"{text[:OUTPUT_CAP_CHARS]}\n{note}", truncated=True)

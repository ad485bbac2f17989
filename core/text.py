"""Text helpers used across layers: one way to shorten a string for a line of output."""

from __future__ import annotations

import re
from typing import Any


def shorten(text: str, limit: int, *, flat: bool = True, ellipsis: str = "…") -> str:
    """``text`` cut to ``limit`` characters with ``ellipsis`` at the end when it was longer;
    ``flat`` first joins its whitespace runs into single spaces, for one-line output."""
    if flat:
        text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - len(ellipsis)] + ellipsis


# Escape sequences (CSI, OSC, DCS/PM/APC, and single-character ones) and every other control
# character but newline and tab: what would move the cursor, retitle the window or write the
# clipboard of the person reading a model's or a tool's output.
_CONTROLS = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"  # CSI: cursor moves, colours, erase
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"  # OSC: window title, clipboard (OSC 52), links
    r"|\x1b[P^_X][^\x1b]*(?:\x1b\\)?"  # DCS, PM, APC, SOS
    r"|\x1b[@-Z\\-_]?"  # other escapes (and a lone ESC)
    r"|\x9b[0-?]*[ -/]*[@-~]"  # 8-bit CSI
    r"|\x9d[^\x07\x9c]*(?:\x07|\x9c)?"  # 8-bit OSC
    r"|[\x00-\x08\x0b-\x1f\x7f\x80-\x9f]"  # C0 (but \t, \n) and C1 controls
)


def terminal_safe(text: str) -> str:
    """``text`` without escape sequences or control characters (newlines and tabs kept)."""
    return _CONTROLS.sub("", text)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def escape_surrogates(value: Any) -> Any:
    """``value`` (a string, or lists and dicts of them) with every lone surrogate written as
    its JSON escape text (``\\ud800``): a model can send one in a JSON string, Python decodes
    it, and UTF-8 cannot encode it, so the history and the store could not take the reply."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", value) if _LONE_SURROGATE.search(value) else value
    if isinstance(value, list):
        return [escape_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {escape_surrogates(k): escape_surrogates(v) for k, v in value.items()}
    return value

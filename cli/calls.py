"""A tool call as a person should see it, in ``run``, ``watch`` and an approval prompt.

A file edit or write is shown as a coloured unified diff, not as its JSON arguments: an edit's
diff is computed from its ``old`` and ``new`` strings (where they sit in the file is not in the
call, so its hunks are headed ``@@`` without line numbers); a write carries only the new
content, so it is shown whole, every line added (the file's earlier content, if any, is not
in the call nor in the history, and reading the workspace now would show a later state).
Any other call is its arguments as JSON on one line.
"""

from __future__ import annotations

import difflib
import json
from typing import Any

from rich.console import Console
from rich.markup import escape

from core.text import shorten, terminal_safe

DIFF_LINES = 40  # diff lines shown for one call; the count of the rest is said
ARGS_CHARS = 160


def safe(text: str) -> str:
    return escape(terminal_safe(text))


def file_diff(arguments: dict[str, Any]) -> list[str] | None:
    """The unified diff of a file ``edit`` or ``write`` call, as plain lines; None for any other call."""
    path = str(arguments.get("path", ""))
    match arguments.get("action"):
        case "edit" if isinstance(arguments.get("old"), str) and isinstance(arguments.get("new"), str):
            old, new = arguments["old"].splitlines(), arguments["new"].splitlines()
            rows = list(difflib.unified_diff(old, new, f"a/{path}", f"b/{path}", lineterm=""))
            if not rows:
                return [f"--- a/{path}", f"+++ b/{path}", "@@ (old and new are the same text) @@"]
            every = " every occurrence" if arguments.get("replace_all") else ""
            return [f"@@{every} @@" if row.startswith("@@") else row for row in rows]
        case "write" if isinstance(arguments.get("content"), str):
            lines = arguments["content"].splitlines()
            return [f"--- a/{path}", f"+++ b/{path}", f"@@ the whole file as written, {len(lines)} lines @@",
                    *(f"+{line}" for line in lines)]
    return None


def diff_markup(rows: list[str], limit: int = DIFF_LINES, indent: str = "    ") -> list[str]:
    """Diff lines in colour (rich markup), the text made inert; at most ``limit`` of them."""
    styled = []
    for row in rows[:limit]:
        if row.startswith(("---", "+++")):
            style = "bold"
        elif row.startswith("@@"):
            style = "cyan"
        elif row.startswith("+"):
            style = "green"
        elif row.startswith("-"):
            style = "red"
        else:
            style = ""
        text = safe(row)
        styled.append(f"{indent}[{style}]{text}[/]" if style else f"{indent}{text}")
    if len(rows) > limit:
        styled.append(f"{indent}[dim]… {len(rows) - limit} more diff lines not shown here[/]")
    return styled


def call_lines(name: str, arguments: dict[str, Any], raw: str | None = None, *, tag: str = "") -> list[str]:
    """The call as rich markup lines: ``→ tool`` and its arguments (``raw``: the text of
    arguments that did not parse), or a file call's target and its diff. ``tag`` is markup
    put after the first line (e.g. that the call was deferred)."""
    diff = file_diff(arguments) if raw is None and name == "file" else None
    if diff is not None:
        head = f"[magenta]→ {safe(name)}[/] {safe(str(arguments.get('action')))} {safe(str(arguments.get('path', '')))}"
        return [head + tag, *diff_markup(diff)]
    args = raw if raw is not None else json.dumps(arguments, ensure_ascii=False)
    return [f"[magenta]→ {safe(name)}[/] {safe(shorten(args or '', ARGS_CHARS))}{tag}"]


def render_call(console: Console, name: str, arguments: dict[str, Any], raw: str | None = None, *, tag: str = "") -> None:
    """Print a call as a person should see it (see ``call_lines``); for the approval prompt
    too: ``render_call(console, pending.tool, pending.arguments)``."""
    for line in call_lines(name, arguments, raw, tag=tag):
        console.print(line)

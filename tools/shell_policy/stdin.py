"""What flows into and out of a simple command: its standard input (a pipe, literal text, a file),
and the literal text it prints when the line shows it (``cat <<EOF``, ``echo x``), so that a script
the line writes and then runs is judged by what it says."""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

import tree_sitter

from tools.shell_policy.words import _text, _Word, _word


@dataclass(frozen=True)
class _Stdin:
    """Where a command's standard input comes from, when it matters (a shell reading a script)."""

    kind: Literal["pipe", "text", "file"]
    text: str | None  # heredoc or here-string value, file path; None when built at run time
    show: str = ""  # for reasons; for a pipe, the program feeding it


def _stdin_of(redirects: list[tree_sitter.Node], stdin: _Stdin | None) -> _Stdin | None:
    for node in redirects:
        if node.type == "heredoc_redirect":
            stdin = _Stdin("text", _heredoc_text(node), "<<")
        elif node.type == "herestring_redirect" and node.named_child_count:
            value = _word(node.named_children[-1])
            stdin = _Stdin("text", value.text, f"<<< {value.show}")
        elif node.type == "file_redirect":
            ops = [child.type for child in node.children if not child.is_named]
            descriptor = [_text(c) for c in node.children if c.type == "file_descriptor"]
            dests = node.children_by_field_name("destination")
            if ops and ops[0] == "<" and descriptor in ([], ["0"]) and dests:
                path = _word(dests[0])
                stdin = _Stdin("file", path.text, f"< {path.show}")
    return stdin


def _heredoc_text(node: tree_sitter.Node) -> str | None:
    start = next((_text(c) for c in node.children if c.type == "heredoc_start"), "")
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if body is None:
        return ""
    if any(q in start for q in "'\"\\"):
        return _text(body)
    if all(child.type == "heredoc_content" for child in body.named_children):
        return re.sub(r"\\([\\$`])", r"\1", _text(body))
    return None  # expansions: the shell sees text built at run time


def _program_of(node: tree_sitter.Node) -> str:
    if node.type == "redirected_statement":
        body = node.child_by_field_name("body")
        node = body if body is not None else node
    name = node.child_by_field_name("name") if node.type == "command" else None
    text = _word(name).text if name is not None else None
    return PurePosixPath(text).name if text else ""


_SILENT = frozenset({":", "true", "false"})


def _printed(body: tree_sitter.Node | None, stdin: _Stdin | None) -> str | None:
    """What a redirected command writes, when the line shows it: ``""`` for no command, ``:``,
    ``true`` and ``cat /dev/null``; a heredoc through ``cat``; ``echo`` of literal words."""
    if body is None:
        return ""
    if body.type != "command" or body.children_by_field_name("redirect"):
        return None
    words = [_word(child) for child in body.children_by_field_name("name")]
    words += [_word(child) for child in body.children_by_field_name("argument")]
    texts = [w.text for w in words]
    if not texts or any(t is None for t in texts):
        return None
    name, args = PurePosixPath(texts[0] or "").name, [t or "" for t in texts[1:]]
    if name in _SILENT:
        return ""
    if name == "cat":
        if args == ["/dev/null"]:
            return ""
        return stdin.text if not args and stdin is not None and stdin.kind == "text" else None
    if name == "echo" and not any(a.startswith("-") for a in args[:1]):
        return " ".join(args) + "\n"
    return "" if (name, args) in (("echo", ["-n"]), ("printf", [""])) else None


@dataclass
class _Written:
    """A file the line writes: what it put there when it shows it, and how (for reasons)."""

    content: str | None
    how: str  # "redirection to", "curl -o", "chmod"


def _key(w: _Word) -> str | None:
    """A written or run path as one spelling (``./x.sh`` is ``x.sh``)."""
    return posixpath.normpath(w.text) if w.text else None


def _assignment(node: tree_sitter.Node) -> tuple[str, _Word]:
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    return (_text(name) if name is not None else "", _word(value) if value is not None else _Word("", ""))

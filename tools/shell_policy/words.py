"""The words of a simple command: their values as the shell will see them, and getopt over them."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import tree_sitter

from tools.shell_policy.verdict import _show


def _text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


@dataclass(frozen=True)
class _Word:
    """One shell word: its value when it is literal (``text``), and as written (``raw``)."""

    text: str | None
    raw: str
    glob: bool = False  # an unquoted * ? or [
    procsub: bool = False  # <(...) or >(...): a pipe, not a path

    @property
    def show(self) -> str:
        return _show(self.raw)


def _lit(text: str) -> _Word:
    return _Word(text, text)


_GLOB = re.compile(r"(?<!\\)[*?\[]")
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}


def _unescape(raw: str) -> str:
    return re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.S)


def _unescape_dq(raw: str) -> str:
    return re.sub(r'\\([\\"$`])', r"\1", raw.replace("\\\n", ""))


def _ansi_c(body: str) -> str:
    def one(m: re.Match[str]) -> str:
        esc = m.group(1)
        if esc[0] in "xuU":
            return chr(min(int(esc[1:], 16), 0x10FFFF))
        if esc[0].isdigit():
            return chr(int(esc, 8))
        return _ANSI_C.get(esc, esc)

    return re.sub(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)", one, body, flags=re.S)


def _word(node: tree_sitter.Node) -> _Word:
    kind, raw = node.type, _text(node)
    if kind == "command_name":
        return _word(node.named_children[0]) if node.named_child_count else _lit(raw)
    if kind == "word":
        return _Word(_unescape(raw), raw, glob=bool(_GLOB.search(raw)))
    if kind in ("number", "brace_expression"):
        return _lit(raw)
    if kind == "raw_string":
        return _Word(raw[1:-1], raw)
    if kind == "ansi_c_string":
        return _Word(_ansi_c(raw[2:-1]), raw)
    if kind == "string":
        literal = all(child.type == "string_content" for child in node.named_children)
        return _Word(_unescape_dq(raw[1:-1]) if literal else None, raw)
    if kind == "concatenation":
        parts = [_word(child) for child in node.named_children]
        if any(part.text is None for part in parts):
            return _Word(None, raw)
        return _Word("".join(part.text or "" for part in parts), raw, glob=any(part.glob for part in parts))
    return _Word(None, raw, procsub=kind == "process_substitution")


@dataclass(frozen=True)
class _Opts:
    flags: list[tuple[str, _Word | None]]
    pos: list[_Word]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.flags)

    def values(self, *names: str) -> list[_Word]:
        return [value for name, value in self.flags if name in names and value is not None]

    def texts(self) -> list[str]:
        return [w.text or "" for w in self.pos]


def _opts(
    args: Sequence[_Word],
    short: str = "",
    long: Iterable[str] = (),
    *,
    optional: str = "",
    posix: bool = False,
    dash_long: Iterable[str] = (),
) -> _Opts:
    """getopt: ``short`` letters and ``long`` names take a value; ``optional`` letters take one only
    when attached; ``posix`` stops at the first operand; ``dash_long`` are ``-name`` options."""
    long, dash_long = frozenset(long), frozenset(dash_long)
    flags: list[tuple[str, _Word | None]] = []
    pos: list[_Word] = []
    i = 0
    while i < len(args):
        word, text = args[i], args[i].text
        nxt = args[i + 1] if i + 1 < len(args) else None
        if text is None or text == "-" or not text.startswith("-"):
            if posix:
                pos.extend(args[i:])
                break
            pos.append(word)
        elif text == "--":
            pos.extend(args[i + 1 :])
            break
        elif text.startswith("--") or text.split("=")[0] in dash_long:
            name, eq, value = text.partition("=")
            if eq:
                flags.append((name, _lit(value)))
            elif name in long or name in dash_long:
                flags.append((name, nxt))
                i += 1
            else:
                flags.append((name, None))
        else:
            for j, letter in enumerate(text[1:], 1):
                rest = text[j + 1 :]
                if letter in short:
                    flags.append(("-" + letter, _lit(rest) if rest else nxt))
                    i += 0 if rest else 1
                    break
                if letter in optional:
                    flags.append(("-" + letter, _lit(rest) if rest else None))
                    break
                flags.append(("-" + letter, None))
        i += 1
    return _Opts(flags, pos)

"""What permission rules match a command line against (``core/permissions.py``): the words of every
simple command in it, and, when the line is one plain command, its rule key (``git push``).

A plain line is one simple command of literal words (``_stages``) that runs nothing in turn (no
``xargs``, ``find -exec``, ``env CMD``, ``bash -c``): only it may be allowed by a rule, so ``git push x
&& rm -rf /`` never passes for ``git push``. Worked out once, when the model's reply arrives, and
recorded with the call, so the workflow compares strings and a replay decides the same.
"""

from __future__ import annotations

import dataclasses
import re

import tree_sitter

from tools.shell_policy import TABLE
from tools.shell_policy.rows import VALUE_OPTIONS
from tools.shell_policy.table import ROWS
from tools.shell_policy.walk import Call, Scan, parsed
from tools.shell_policy.words import SAFE, Verdict, Word, canonical, command_words, descendants, opts

DYNAMIC = "$?"  # a word built at run time: matches no rule word
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9-]*")
_AS_USER = frozenset({"sudo", "su", "doas", "pkexec", "run0", "runuser", "sg"})  # its rule is the user's
_NOT_PLAIN = frozenset({
    "command_substitution", "process_substitution", "expansion", "simple_expansion", "arithmetic_expansion",
    "variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect",
})


def command_shape(command: str) -> tuple[list[list[str]], str | None]:
    """(the words of each simple command in the line, its rule key or None)."""
    root, _ = parsed(command)
    if root is None:
        return [], None
    words = [[w.text if w.text is not None else DYNAMIC for w in ws] for ws in _commands(root)]
    return words, _rule_key(root)


def plain_pipeline(command: str) -> list[list[str]] | None:
    """The argv of each command of a line that is one simple command or a pipeline of them (``_stages``),
    every word unglobbed; None for anything else. What runs without a shell when there is no sandbox: a
    program started by ``execve`` with these words cannot be redirected by ``hash``, an alias, a function
    or a ``PATH=`` prefix, because nothing interprets the line but this parser."""
    root, _ = parsed(command)
    stages = _stages(root) if root is not None else None
    if stages is None or any(w.glob or w.procsub for words in stages for w in words):
        return None
    return [[w.text or "" for w in words] for words in stages]


def _commands(root: tree_sitter.Node) -> list[list[Word]]:
    return [words for node in descendants(root) if node.type == "command" and (words := command_words(node))]


def _stages(root: tree_sitter.Node) -> list[list[Word]] | None:
    """The words of each command of a line that is one simple command or a pipeline of them, every
    word literal, with no redirection, assignment, substitution or list; None for anything else."""
    if root.named_child_count != 1 or any(node.type in _NOT_PLAIN for node in descendants(root)):
        return None
    top = root.named_children[0]
    parts = top.named_children if top.type == "pipeline" else [top]
    if any(part.type != "command" for part in parts) or (top.type == "pipeline" and b"|&" in (top.text or b"")):
        return None
    found = [_commands(part) for part in parts]
    if any(len(words) != 1 or part.named_child_count != len(words[0]) for part, words in zip(parts, found)):
        return None  # a nested command or something beside the words
    stages = [words[0] for words in found]
    return None if any(w.text is None for words in stages for w in words) else stages


def _rule_key(root: tree_sitter.Node) -> str | None:
    stages = _stages(root)
    if stages is None or len(stages) != 1 or _evaluated(root) != 1:  # it runs another command (xargs, bash -c)
        return None
    program, rest = stages[0][0].text or "", stages[0][1:]
    if program.rsplit("/", 1)[-1] in _AS_USER:
        return None
    sub = rest[0].text if rest else None
    key = [program, sub] if sub and _SUBCOMMAND.fullmatch(sub) else [program]
    return " ".join(_narrowed(program, rest) or key)


def _narrowed(program: str, args: list[Word]) -> list[str] | None:
    """For a program whose rows mark what makes a call worse (``git push --force``, ``rm -r``):
    the program, for a subcommand row its subcommand and target (the remote), and every word
    that makes it worse, so an allow rule matches only calls that name no more than it does.
    None when no such row is about this call."""
    name = canonical(program.rsplit("/", 1)[-1])
    rows = [r for r in ROWS if r.worse and name in r.programs]
    short, long = VALUE_OPTIONS.get(name, ("", ()))
    top = opts(args, short, long, posix=True).pos
    sub = top[0].text or "" if top else ""
    rows = [r for r in rows if not r.sub or sub in r.sub]
    if not rows:
        return None
    key = [program]
    if any(r.sub for r in rows):  # what comes before the subcommand stays (``git -C repo``)
        short, long = VALUE_OPTIONS.get(f"{name} {sub}", ("", ()))
        target = opts(top[1:], short, long).texts()[:1]
        key += [w.text or "" for w in args[: len(args) - len(top)]]
        key += [sub, *(t for t in target if t[:1] not in ("+", ":"))]
    elif args and args[0].text and _SUBCOMMAND.fullmatch(args[0].text):
        key.append(args[0].text)
    return key + list(dict.fromkeys(mark for r in rows for mark in r.marks(args)))


def _evaluated(root: tree_sitter.Node) -> int:
    """How many commands the classifier's walk judges in the line (each runs every check)."""
    seen: list[Word] = []

    def count(call: Call, head: Word) -> Verdict:
        seen.append(head)
        return SAFE

    Scan(dataclasses.replace(TABLE, checks=(count, *TABLE.checks)), 0).visit(root, None, 0)
    return len(seen)

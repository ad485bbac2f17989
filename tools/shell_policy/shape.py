"""What permission rules match a command line against (``core/permissions.py``): the words
of every simple command in it, and, when the line is one plain command, its rule key (the
program and its subcommand, ``git push``).

A line is plain when it is one simple command of literal words: no list (``;``, ``&&``), no
pipe, no substitution, no redirection, no assignment before it, and nothing it runs in turn
(the walk of the classifier sees a single command: no ``xargs``, ``find -exec``, ``env CMD``,
``bash -c``). Only a plain line may be allowed by a rule, so ``git push x && rm -rf /`` never
passes for ``git push``. Worked out once, when the model's reply arrives, and recorded with
the call, so the workflow compares strings and a replay decides the same.
"""

from __future__ import annotations

import dataclasses
import re

import tree_sitter

from tools.shell_policy import TABLE
from tools.shell_policy.rows import VALUE_OPTIONS
from tools.shell_policy.table import ROWS
from tools.shell_policy.walk import MAX_CHARS, MAX_NODES, Call, Scan
from tools.shell_policy.words import SAFE, Verdict, Word, canonical, opts, parse, word_of

DYNAMIC = "$?"  # a word built at run time: matches no rule word
_SUBCOMMAND = re.compile(r"[a-z][a-z0-9-]*")
_AS_USER = frozenset({"sudo", "su", "doas", "pkexec", "run0", "runuser", "sg"})  # its rule is the user's
_NOT_PLAIN = frozenset({
    "command_substitution", "process_substitution", "expansion", "simple_expansion", "arithmetic_expansion",
    "variable_assignment", "file_redirect", "heredoc_redirect", "herestring_redirect",
})


def command_shape(command: str) -> tuple[list[list[str]], str | None]:
    """(the words of each simple command in the line, its rule key or None)."""
    if len(command) > MAX_CHARS or "\x00" in command:
        return [], None
    root = parse(command.encode("utf-8", "replace")).root_node
    if root.has_error or root.descendant_count > MAX_NODES:
        return [], None
    words = _commands(root)
    return [[w.text if w.text is not None else DYNAMIC for w in ws] for ws in words], _rule_key(root, words, command)


def plain_pipeline(command: str) -> list[list[str]] | None:
    """The argv of each command of a line that is one simple command or a pipeline of them,
    every word literal and unglobbed, with no redirection, assignment, substitution or list;
    None for anything else. What runs without a shell when there is no sandbox: a program
    started by ``execve`` with these words cannot be redirected by ``hash``, an alias, a
    function or a ``PATH=`` prefix, because nothing interprets the line but this parser."""
    if len(command) > MAX_CHARS or "\x00" in command:
        return None
    root = parse(command.encode("utf-8", "replace")).root_node
    if root.has_error or root.named_child_count != 1 or _has(root, _NOT_PLAIN):
        return None
    top = root.named_children[0]
    parts = top.named_children if top.type == "pipeline" else [top]
    if any(part.type != "command" for part in parts) or (top.type == "pipeline" and b"|&" in (top.text or b"")):
        return None
    found: list[list[str]] = []
    for part, words in zip(parts, [_commands(part) for part in parts]):
        if len(words) != 1 or part.named_child_count != len(words[0]):
            return None  # a nested command or something beside the words
        if any(w.text is None or w.glob or w.procsub for w in words[0]):
            return None
        found.append([w.text or "" for w in words[0]])
    return found


def _commands(root: tree_sitter.Node) -> list[list[Word]]:
    found, stack = [], [root]
    while stack:
        node = stack.pop()
        if node.type == "command":
            words = [word_of(c) for c in node.children_by_field_name("name")]
            words += [word_of(c) for c in node.children_by_field_name("argument")]
            if words:
                found.append(words)
        stack.extend(reversed(node.named_children))
    return found


def _rule_key(root: tree_sitter.Node, words: list[list[Word]], command: str) -> str | None:
    if root.named_child_count != 1 or root.named_children[0].type != "command" or len(words) != 1:
        return None
    if _has(root, _NOT_PLAIN) or any(w.text is None for w in words[0]):
        return None
    if _evaluated(command) != 1:  # it runs another command (a wrapper, xargs, a nested shell)
        return None
    program, rest = words[0][0].text or "", words[0][1:]
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


def _has(node: tree_sitter.Node, kinds: frozenset[str]) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if current.type in kinds:
            return True
        stack.extend(current.named_children)
    return False


def _evaluated(command: str) -> int:
    """How many commands the classifier's walk judges in the line (each runs every check)."""
    seen = [0]

    def count(call: Call, head: Word) -> Verdict:
        seen[0] += 1
        return SAFE

    table = dataclasses.replace(TABLE, checks=(count, *TABLE.checks))
    scan = Scan(table, 0)
    scan.visit(parse(command.encode("utf-8", "replace")).root_node, None, 0)
    return seen[0]

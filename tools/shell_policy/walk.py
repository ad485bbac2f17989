"""The walk: parse a command line, and judge every simple command in it wherever it sits.

A simple command is judged by the rule for its program. The walk does not import the rules: they
call back into it for the commands they run (``xargs rm``, ``bash -c STR``), so the table of rules
(``table.py``) is handed in, as a ``_Table``, by ``classify_command``.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import PurePosixPath
from typing import Literal

import tree_sitter
import tree_sitter_bash

from tools.base import Danger
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad, _worse
from tools.shell_policy.words import _text, _Word, _word

MAX_CHARS = 64 * 1024
MAX_NESTING = 4  # bash -c inside eval inside ...
MAX_TREE_DEPTH = 150
MAX_NODES = 8000  # bounds the walk: a long script, not a command


_PARSE_LOCK = threading.Lock()


@cache
def _parser() -> tree_sitter.Parser:
    return tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def _parse(source: bytes) -> tree_sitter.Tree:
    with _PARSE_LOCK:  # a Parser is not safe to share between threads
        return _parser().parse(source)


@dataclass(frozen=True)
class _Stdin:
    """Where a command's standard input comes from, when it matters (a shell reading a script)."""

    kind: Literal["pipe", "text", "file"]
    text: str | None  # heredoc or here-string value, file path; None when built at run time
    show: str = ""  # for reasons; for a pipe, the program feeding it


_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
_HERE = re.compile(r'^"?(\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`)"?(/|$)')
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})


def _sink(w: _Word) -> bool:
    return w.text is not None and (w.text in _SINKS or w.text.startswith("/dev/fd/"))


class _Scan:
    """One walk over a parsed command line; keeps the first dangerous verdict."""

    def __init__(self, table: _Table, nesting: int, cwd_outside: bool = False) -> None:
        self.table = table
        self.nesting = nesting
        self.cwd_outside = cwd_outside  # after `cd /elsewhere`, relative paths are outside too
        self.verdict = SAFE

    def note(self, verdict: Verdict) -> None:
        self.verdict = _worse(self.verdict, verdict)

    def outside(self, w: _Word) -> bool:
        if w.procsub or _sink(w):
            return False
        if w.text is None:
            return self.cwd_outside or not _HERE.match(w.raw) or ".." in w.raw
        if ".." in PurePosixPath(w.text).parts or w.text.startswith("~"):
            return True
        if w.text.startswith("/"):
            return not (w.text == "/tmp" or w.text.startswith("/tmp/"))
        return self.cwd_outside

    def visit(self, node: tree_sitter.Node, stdin: _Stdin | None, depth: int) -> None:
        if self.verdict[0] is Danger.DANGEROUS:
            return
        if depth > MAX_TREE_DEPTH:
            self.note(_bad("nested too deeply to see through"))
            return
        kind = node.type
        if kind == "command":
            redirects = node.children_by_field_name("redirect")
            words = [_word(child) for child in node.children_by_field_name("name")]
            words += [_word(child) for child in node.children_by_field_name("argument")]
            if words:
                self.note(_evaluate(words, _stdin_of(redirects, stdin), self))
            stdin = None
        elif kind == "redirected_statement":
            body = node.child_by_field_name("body")
            redirects = node.children_by_field_name("redirect")
            if body is not None:
                self.visit(body, _stdin_of(redirects, stdin), depth + 1)
            for redirect in redirects:
                self.visit(redirect, None, depth + 1)
            return
        elif kind == "pipeline":
            feeder = _program_of(node.named_children[0]) if node.named_child_count else ""
            for i, stage in enumerate(node.named_children):
                self.visit(stage, stdin if i == 0 else _Stdin("pipe", None, feeder), depth + 1)
                feeder = _program_of(stage)
            return
        elif kind == "heredoc_redirect":
            for child in node.named_children:
                if child.type == "pipeline":  # `cat <<EOF | sh`: the pipe starts at the heredoc
                    for stage in child.named_children:
                        self.visit(stage, _Stdin("pipe", None, ""), depth + 1)
                else:
                    self.visit(child, None, depth + 1)
            return
        elif kind == "file_redirect":  # what runs inside the target first: `> "$(git push)"`
            for child in node.named_children:
                self.visit(child, None, depth + 1)
            if self.verdict[0] is not Danger.DANGEROUS:
                self._redirect(node)
            return
        elif kind in ("command_substitution", "process_substitution"):
            stdin = None
        elif kind == "function_definition":
            self._fork_bomb(node)
        for child in node.named_children:
            self.visit(child, stdin, depth + 1)

    def _redirect(self, node: tree_sitter.Node) -> None:
        ops = [child.type for child in node.children if not child.is_named]
        dests = node.children_by_field_name("destination")
        if not ops or not dests:
            return
        op, dest = ops[0], _word(dests[0])
        if op in (">&", "<&") and (dests[0].type == "number" or dest.text == "-"):
            return  # 2>&1: a copy of a descriptor, not a file
        if dest.text is not None and dest.text.startswith(("/dev/tcp/", "/dev/udp/")):
            self.note(_bad(f"sends data over the network (redirection to {dest.show})"))
        elif op in _WRITES:
            if self.outside(dest):
                self.note(_bad(f"writes outside the workspace (redirection to {dest.show})"))
            elif not _sink(dest):
                self.note(MODERATE)

    def _fork_bomb(self, node: tree_sitter.Node) -> None:
        name, body = node.child_by_field_name("name"), node.child_by_field_name("body")
        if name is None or body is None:
            return
        calls, stack = 0, [body]
        while stack:
            current = stack.pop()
            if current.type == "command_name" and current.text == name.text:
                calls += 1
            stack.extend(current.named_children)
        if calls >= 2:
            self.note(_bad(f"defines a fork bomb ({_text(name)})"))


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


def _classify(command: str, table: _Table, nesting: int, cwd_outside: bool = False) -> Verdict:
    if len(command) > MAX_CHARS:
        return _bad("too long to inspect")
    if "\x00" in command:
        return _bad("contains a NUL byte, so it can't be seen through")
    root = _parse(command.encode("utf-8", "replace")).root_node
    if root.has_error:
        return _bad("could not be parsed, so it can't be seen through")
    if root.descendant_count > MAX_NODES:
        return _bad("too long to inspect")
    scan = _Scan(table, nesting, cwd_outside)
    scan.visit(root, None, 0)
    return scan.verdict


@dataclass
class _Call:
    name: str  # as written, without its directory: for reasons
    args: list[_Word]
    stdin: _Stdin | None
    scan: _Scan = field(repr=False)

    def outside(self, w: _Word) -> bool:
        return self.scan.outside(w)

    def run(self, words: Sequence[_Word], via: str = "", stdin: _Stdin | None = None) -> Verdict:
        """The verdict of a command this one runs (``xargs rm``), named ``via`` when dangerous."""
        if not words:
            return SAFE
        verdict = _evaluate(list(words), stdin, self.scan)
        return _bad(f"in {via}: {verdict[1]}") if via and verdict[0] is Danger.DANGEROUS else verdict

    def nested(self, source: str, via: str) -> Verdict:
        """The verdict of shell source this command runs (``bash -c STR``)."""
        if self.scan.nesting >= MAX_NESTING:
            return _bad("nested too deeply to see through")
        verdict = _classify(source, self.scan.table, self.scan.nesting + 1, self.scan.cwd_outside)
        return _bad(f"in {via}: {verdict[1]}") if verdict[0] is Danger.DANGEROUS else verdict

    def joined(self, words: Sequence[_Word], via: str) -> Verdict:
        """Words a shell will join and parse again (``eval a b``, ``watch cmd``)."""
        dynamic = [w for w in words if w.text is None]
        if dynamic:
            return _bad(f"runs a command built at run time ({via} {dynamic[0].show})")
        return self.nested(" ".join(w.text or "" for w in words), via)

    def targets_outside(self, targets: Iterable[_Word], what: str) -> Verdict:
        """MODERATE, or DANGEROUS when one of these written paths is outside the workspace."""
        for target in targets:
            if self.outside(target):
                return _bad(f"writes outside the workspace ({what} {target.show})")
        return MODERATE


_PYTHON = re.compile(r"(python|pypy)[\d.]*")
_ALIASES = {
    "nodejs": "node", "bun": "node", "mariadb": "mysql", "mongo": "mongosh", "podman": "docker",
    "nerdctl": "docker", "tofu": "terraform", "terragrunt": "terraform", "oc": "kubectl", "fly": "flyctl",
    "ncat": "nc", "netcat": "nc", "socat": "nc", "telnet": "nc", "mosh": "ssh", "sshpass": "ssh",
    "ssh-copy-id": "ssh", "gradlew": "gradle", "mvnw": "mvn", "egrep": "grep", "fgrep": "grep",
    "gawk": "awk", "mawk": "awk", "nawk": "awk", "luajit": "lua", "R": "Rscript", "fdfind": "fd",
    "srm": "shred", "wipe": "shred", "gunzip": "gzip", "bzip2": "gzip", "bunzip2": "gzip", "xz": "gzip",
    "unxz": "gzip", "zstd": "gzip", "lz4": "gzip", "sls": "serverless", "mailx": "mail", "sendmail": "mail",
    "mutt": "mail", "trash-put": "trash", "toybox": "busybox", "pip3": "pip",
}


def _canonical(name: str) -> str:
    if _PYTHON.fullmatch(name):
        return "python"
    if re.fullmatch(r"pip[\d.]+", name):
        return "pip"
    for family in ("mkfs", "fsck"):
        if name.startswith(family + ".") or name == family:
            return family
    return _ALIASES.get(name, name)


def _evaluate(words: list[_Word], stdin: _Stdin | None, scan: _Scan) -> Verdict:
    head = words[0]
    if head.text is None:
        return _bad(f"runs a command built at run time ({head.show})")
    name = head.text.rsplit("/", 1)[-1] or head.text
    prog = _canonical(name)
    call = _Call(name, words[1:], stdin, scan)
    rule = scan.table.rules.get(prog)
    if rule is not None:
        if [w.text for w in call.args] in (["--version"], ["--help"]):
            return SAFE
        return rule(call)
    return SAFE if prog in scan.table.read_only else MODERATE


@dataclass(frozen=True)
class _Table:
    """What ``_evaluate`` looks a program up in: its rule, else whether it only reads (else MODERATE)."""

    rules: Mapping[str, Callable[[_Call], Verdict]]
    read_only: frozenset[str]

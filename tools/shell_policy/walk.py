"""The walk: parse a command line, and judge every simple command in it wherever it sits, by the
checks every command passes and its program's code and rows (a ``Table`` handed in, since they
call back into the walk for what they run). What the line writes is remembered, so a script it
writes and then runs is judged by what the line put in it."""

from __future__ import annotations

import dataclasses
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import tree_sitter
import tree_sitter_bash

from tools.base import Danger
from tools.shell_policy.paths import HERE, RELATIVE_PATH, Written, is_secret, is_sink, path_key, persisting
from tools.shell_policy.rows import Row, Table
from tools.shell_policy.words import (
    MODERATE,
    SAFE,
    Stdin,
    Verdict,
    Word,
    bad,
    canonical,
    command_words,
    descendants,
    lit,
    node_text,
    printed_by,
    program_of,
    runs_each,
    shorten,
    stdin_of,
    word_of,
    worse,
)

MAX_CHARS = 64 * 1024
MAX_NESTING = 4  # bash -c inside eval inside ...
MAX_TREE_DEPTH = 150
MAX_NODES = 8000  # bounds the walk: a long script, not a command
_WRITES = frozenset({">", ">>", ">|", "&>", "&>>", ">&"})
_CLOBBERS = frozenset({">", ">|", "&>", ">&"})
_OWN_INPUT = frozenset(  # what runs in these does not read the statement's input
    {"command", "command_substitution", "process_substitution", "file_redirect", "heredoc_redirect"})
_PARSE_LOCK = threading.Lock()
_PARSER = tree_sitter.Parser(tree_sitter.Language(tree_sitter_bash.language()))


def parsed(command: str) -> tuple[tree_sitter.Node | None, str]:
    """The line's syntax tree, or None and why it can't be seen through."""
    if len(command) > MAX_CHARS:
        return None, "too long to inspect"
    if "\x00" in command:
        return None, "contains a NUL byte, so it can't be seen through"
    with _PARSE_LOCK:  # a Parser is not safe to share between threads
        root = _PARSER.parse(command.encode("utf-8", "replace")).root_node
    if root.has_error:
        return None, "could not be parsed, so it can't be seen through"
    if root.descendant_count > MAX_NODES:
        return None, "too long to inspect"
    return root, ""


@dataclass
class Scan:
    """One walk over a parsed command line; keeps the first dangerous verdict. A nested shell's
    walk starts where its parent's is (``cd``) and shares what the line wrote."""

    table: Table
    nesting: int
    workspace: Path | None = None  # to show scripts from
    written: dict[str, Written] = field(default_factory=dict)
    cwd_outside: bool = False  # after `cd /elsewhere`
    cwd: str | None = None  # where that was, when known
    moved: bool = False  # after any `cd`
    verdict: Verdict = SAFE
    printed: str | None = None  # what the statement whose redirections are seen writes

    def note(self, verdict: Verdict) -> None:
        self.verdict = worse(self.verdict, verdict)

    def outside(self, w: Word) -> bool:
        if w.procsub or is_sink(w):
            return False
        if w.text is None:
            return self.cwd_outside or not HERE.match(w.raw) or ".." in w.raw
        if ".." in PurePosixPath(w.text).parts or w.text.startswith("~"):
            return True
        if w.text.startswith("/"):
            return not (w.text == "/tmp" or w.text.startswith("/tmp/"))
        return self.cwd_outside

    def wrote(self, target: Word, how: str, content: str | None = None, *, keep: bool = False) -> Verdict:
        """A write inside the workspace: DANGEROUS where it persists, else remembered."""
        persists = persisting(target, self.cwd)
        if persists:
            return bad(f"{persists} ({how} {target.show})")
        key = path_key(target)
        if key is not None and not (keep and key in self.written):
            self.written[key] = Written(content, how)
        return MODERATE

    def visit(self, node: tree_sitter.Node, stdin: Stdin | None, depth: int) -> None:
        if self.verdict[0] is Danger.DANGEROUS:
            return
        if depth > MAX_TREE_DEPTH:
            self.note(bad("nested too deeply to see through"))
            return
        kind, children = node.type, node.named_children
        if kind == "redirected_statement":
            body, redirects = node.child_by_field_name("body"), node.children_by_field_name("redirect")
            here, outer = stdin_of(redirects, stdin), self.printed
            if body is not None:
                self.visit(body, here, depth + 1)
            self.printed = printed_by(body, here)
            for redirect in redirects:
                self.visit(redirect, None, depth + 1)
            self.printed = outer
            return
        if kind == "pipeline":
            for stage in children:
                self.visit(stage, stdin, depth + 1)
                stdin = Stdin("pipe", None, program_of(stage))
            return
        if kind == "command":
            words = command_words(node)
            env = [_assignment(child) for child in children if child.type == "variable_assignment"]
            if words:
                self.note(evaluate(words, stdin_of(node.children_by_field_name("redirect"), stdin), self, env))
            self.printed = None
        elif kind == "declaration_command":  # export PATH=.: judged by the rows of ``export``
            words = [Word(None, node_text(c)) if c.type == "variable_assignment" else word_of(c) for c in children]
            self.note(evaluate([lit(node_text(node.children[0])), *words], None, self))
        elif kind in ("variable_assignment", "for_statement"):  # f=/etc/shadow; for f in ~/.ssh/*
            named = next((w for w in map(word_of, node.children_by_field_name("value")) if is_secret(w, self.cwd)), None)
            if named is not None:
                self.note(bad(f"reads a secret file ({named.show})"))
            elif kind == "variable_assignment" and re.search(RELATIVE_PATH, node_text(node)):
                self.note(bad(f"changes what a command name runs ({shorten(node_text(node))})"))
        elif kind == "function_definition" and (name := node.child_by_field_name("name")) is not None:
            bodies = [n for body in node.children_by_field_name("body") for n in descendants(body)]
            if sum(n.type == "command_name" and n.text == name.text for n in bodies) >= 2:  # a fork bomb
                self.note(bad(f"defines a fork bomb ({node_text(name)})"))
        printed, inner = self.printed, None if kind in _OWN_INPUT else stdin
        for child in children:  # `cat <<EOF | sh`: the pipe starts at the heredoc
            piped = kind == "heredoc_redirect" and child.type == "pipeline"
            self.visit(child, Stdin("pipe", None, "") if piped else inner, depth + 1)
        if kind == "file_redirect" and self.verdict[0] is not Danger.DANGEROUS:  # after what runs in its target
            self._redirect(node, printed)

    def _redirect(self, node: tree_sitter.Node, printed: str | None) -> None:
        ops = [child.type for child in node.children if not child.is_named]
        dests = node.children_by_field_name("destination")
        if not ops or not dests:
            return
        op, dest = ops[0], word_of(dests[0])
        if op in (">&", "<&") and (dests[0].type == "number" or dest.text == "-"):
            return  # 2>&1: a copy of a descriptor, not a file
        if dest.text is not None and dest.text.startswith(("/dev/tcp/", "/dev/udp/")):
            self.note(bad(f"sends data over the network (redirection to {dest.show})"))
        elif op in _WRITES:
            if self.outside(dest):
                self.note(bad(f"writes outside the workspace (redirection to {dest.show})"))
            elif printed == "" and op in _CLOBBERS and not is_sink(dest) and not (dest.text or "").startswith("/tmp/"):
                self.note(bad(f"empties a file ({op} {dest.show})"))
            elif not is_sink(dest):
                self.note(self.wrote(dest, "redirection to", printed if op in _CLOBBERS else None))
        elif op in ("<", "<>") and is_secret(dest, self.cwd):
            self.note(bad(f"reads a secret file (< {dest.show})"))


def _assignment(node: tree_sitter.Node) -> tuple[str, Word]:
    name, value = node.child_by_field_name("name"), node.child_by_field_name("value")
    return (node_text(name) if name is not None else "", word_of(value) if value is not None else Word("", ""))


def classify(command: str, table: Table, nesting: int, parent: Scan | None = None,
             workspace: Path | None = None) -> Verdict:
    root, why = parsed(command)
    if root is None:
        return bad(why)
    if parent is None:
        scan = Scan(table, nesting, workspace)
    else:  # where the parent's walk is, sharing what the line wrote
        scan = dataclasses.replace(parent, table=table, nesting=nesting, verdict=SAFE, printed=None)
    scan.visit(root, None, 0)
    return scan.verdict


@dataclass
class Call:
    name: str  # as written, without its directory: for reasons
    args: list[Word]
    stdin: Stdin | None
    scan: Scan = field(repr=False)
    env: Sequence[tuple[str, Word]] = ()  # VAR=value before it, or given to `env`

    @property
    def cwd(self) -> str | None:
        return self.scan.cwd

    def outside(self, w: Word) -> bool:
        return self.scan.outside(w)

    def run(self, words: Sequence[Word], via: str = "", stdin: Stdin | None = None,
            env: Sequence[tuple[str, Word]] | None = None) -> Verdict:
        """The verdict of a command this one runs (``xargs rm``), named ``via`` when dangerous."""
        if not words:
            return SAFE
        verdict = evaluate(list(words), stdin, self.scan, self.env if env is None else env)
        return bad(f"in {via}: {verdict[1]}") if via and verdict[0] is Danger.DANGEROUS else verdict

    def nested(self, source: str, via: str) -> Verdict:
        """The verdict of shell source this command runs (``bash -c STR``)."""
        if self.scan.nesting >= MAX_NESTING:
            return bad("nested too deeply to see through")
        verdict = classify(source, self.scan.table, self.scan.nesting + 1, self.scan)
        return bad(f"in {via}: {verdict[1]}") if verdict[0] is Danger.DANGEROUS else verdict

    def joined(self, words: Sequence[Word], via: str) -> Verdict:
        """Words a shell will join and parse again (``eval a b``, ``watch cmd``)."""
        dynamic = [w for w in words if w.text is None]
        if dynamic:
            return bad(f"runs a command built at run time ({via} {dynamic[0].show})")
        return self.nested(" ".join(w.text or "" for w in words), via)

    def each(self, words: Sequence[Word], via: str, placeholder: str | None = "{}") -> Verdict:
        """The command xargs, find -exec or fd -x runs on what it finds (``runs_each``)."""
        return runs_each(words, via, placeholder, self.run)

    def targets_outside(self, targets: Sequence[Word], what: str) -> Verdict:
        """MODERATE, or DANGEROUS when a written path is outside the workspace or persists (``.bashrc``)."""
        outside = [target for target in targets if self.outside(target)]
        if outside:
            return bad(f"writes outside the workspace ({what} {outside[0].show})")
        written = (self.scan.wrote(target, what) for target in targets)  # remembered up to one that persists
        return next((verdict for verdict in written if verdict[0] is Danger.DANGEROUS), MODERATE)

    def decide(self, rows: Sequence[Row], program: str, code: Verdict | None) -> Verdict | None:
        """The verdict of the first row that decides (a wrapper's at least that of its ``code``), or None."""
        floor = None  # MODERATE once a ``writes`` row without a reason finds words written inside
        for each in rows:
            hit = each.matches(program, self.args)
            what, targets = each.written(self.name, program, self.args, hit[1]) if hit and each.writes else ("", [])
            if targets and (floor := self.targets_outside(targets, what))[0] is Danger.DANGEROUS:
                return floor
            if hit is None or each.writes and not (targets and each.reason):
                continue
            if each.wraps is not None:
                return each.wraps.judge(self, worse((each.wraps.floor, ""), code or SAFE))
            verdict = bad(each.shown(self.name, *hit)) if each.verdict is Danger.DANGEROUS else (each.verdict, "")
            return worse(verdict, floor or SAFE)
        return floor


def evaluate(words: list[Word], stdin: Stdin | None, scan: Scan, env: Sequence[tuple[str, Word]] = ()) -> Verdict:
    head = words[0]
    if head.text is None:
        return bad(f"runs a command built at run time ({head.show})")
    name = head.text.rsplit("/", 1)[-1] or head.text
    prog = canonical(name)
    call = Call(name, words[1:], stdin, scan, env)
    checked = SAFE
    for check in scan.table.checks:  # what every command is checked for, whatever its program
        checked = worse(checked, check(call, head))
        if checked[0] is Danger.DANGEROUS:
            return checked
    rule, rows = scan.table.rules.get(prog), scan.table.rows.get(prog, ())
    if (rule is not None or rows) and [w.text for w in call.args] in (["--version"], ["--help"]):
        return checked
    verdict = rule(call) if rule is not None else None
    if verdict is None or verdict[0] is not Danger.DANGEROUS:  # what the code found stands when it asks
        verdict = call.decide(rows, prog, verdict) or verdict
    if verdict is None:
        verdict = SAFE if prog in scan.table.read_only else MODERATE
    return worse(verdict, checked)

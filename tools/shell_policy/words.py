"""The gate's vocabulary: verdicts, program names, the words of a command as the shell will see
them (with getopt), and what flows in and out of a command, so a script the line writes is judged.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Literal

import tree_sitter

from tools.base import Danger

Verdict = tuple[Danger, str]
SAFE: Verdict = (Danger.SAFE, "")
MODERATE: Verdict = (Danger.MODERATE, "")

SHOW_CHARS = 40
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash", "csh", "tcsh"})
DELETERS = frozenset({"rm", "unlink", "shred", "srm", "wipe"})  # in xargs or find -exec: delete what it finds


def bad(reason: str) -> Verdict:
    return Danger.DANGEROUS, reason


def worse(a: Verdict, b: Verdict) -> Verdict:
    """The first dangerous verdict, else MODERATE if either is, else SAFE."""
    for verdict in (a, b):
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return MODERATE if Danger.MODERATE in (a[0], b[0]) else SAFE


def shorten(raw: str) -> str:
    raw = " ".join(raw.split())
    return raw if len(raw) <= SHOW_CHARS else raw[: SHOW_CHARS - 1] + "…"


# Families named by the group that matches: python3.12 and pypy are python, pip3 is pip, mkfs.ext4 is mkfs.
_FAMILIES = re.compile(
    r"(?P<python>(?:python|pypy)[\d.]*)|(?P<pip>pip[\d.]*)|(?P<mkfs>mkfs(?:\..*)?)|(?P<fsck>fsck(?:\..*)?)", re.S)
_ALIASES = {alias: name for group in """node:nodejs,bun mysql:mariadb mongosh:mongo docker:podman,nerdctl
    terraform:tofu,terragrunt kubectl:oc flyctl:fly nc:ncat,netcat,socat,telnet ssh:mosh,sshpass,ssh-copy-id
    gradle:gradlew mvn:mvnw grep:egrep,fgrep awk:gawk,mawk,nawk lua:luajit Rscript:R fd:fdfind shred:srm,wipe
    serverless:sls gzip:gunzip,bzip2,bunzip2,xz,unxz,zstd,lz4 mail:mailx,sendmail,mutt trash:trash-put
    busybox:toybox""".split() for name, _, aliases in [group.partition(":")] for alias in aliases.split(",")}


def canonical(name: str) -> str:
    family = _FAMILIES.fullmatch(name)
    if family and family.lastgroup:
        return family.lastgroup
    return _ALIASES.get(name, name)


def node_text(node: tree_sitter.Node) -> str:
    return node.text.decode("utf-8", "replace") if node.text else ""


def descendants(node: tree_sitter.Node) -> Iterator[tree_sitter.Node]:
    """``node`` and the named nodes under it, in the order they are written."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.named_children))


@dataclass(frozen=True)
class Word:
    """One shell word: its value when it is literal (``text``), and as written (``raw``)."""

    text: str | None
    raw: str
    glob: bool = False  # an unquoted * ? or [
    procsub: bool = False  # <(...) or >(...): a pipe, not a path

    @property
    def show(self) -> str:
        return shorten(self.raw)


def lit(text: str) -> Word:
    return Word(text, text)


_GLOB = re.compile(r"(?<!\\)[*?\[]")
_ANSI_C_ESCAPE = re.compile(r"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|.)", re.S)
_ANSI_C = {"n": "\n", "t": "\t", "r": "\r", "a": "\a", "b": "\b", "e": "\x1b", "f": "\f", "v": "\v"}


def _ansi_c(m: re.Match[str]) -> str:
    esc = m.group(1)
    if esc[0] in "xuU":
        return chr(min(int(esc[1:], 16), 0x10FFFF))
    return chr(int(esc, 8)) if esc[0].isdigit() else _ANSI_C.get(esc, esc)


def word_of(node: tree_sitter.Node) -> Word:
    kind, raw = node.type, node_text(node)
    if kind == "command_name":
        return word_of(node.named_children[0]) if node.named_child_count else lit(raw)
    if kind == "word":
        return Word(re.sub(r"\\(.)", r"\1", raw.replace("\\\n", ""), flags=re.S), raw, glob=bool(_GLOB.search(raw)))
    if kind in ("number", "brace_expression"):
        return lit(raw)
    if kind == "raw_string":
        return Word(raw[1:-1], raw)
    if kind == "ansi_c_string":
        return Word(_ANSI_C_ESCAPE.sub(_ansi_c, raw[2:-1]), raw)
    if kind == "string":
        literal = all(child.type == "string_content" for child in node.named_children)
        return Word(re.sub(r'\\([\\"$`])', r"\1", raw[1:-1].replace("\\\n", "")) if literal else None, raw)
    if kind == "concatenation":
        parts = [word_of(child) for child in node.named_children]
        if any(part.text is None for part in parts):
            return Word(None, raw)
        return Word("".join(part.text or "" for part in parts), raw, glob=any(part.glob for part in parts))
    return Word(None, raw, procsub=kind == "process_substitution")


def command_words(node: tree_sitter.Node) -> list[Word]:
    """The words of a simple command: its name and arguments."""
    return [word_of(child) for role in ("name", "argument") for child in node.children_by_field_name(role)]


@dataclass(frozen=True)
class Opts:
    flags: list[tuple[str, Word | None]]
    pos: list[Word]

    def has(self, *names: str) -> bool:
        return any(name in names for name, _ in self.flags)

    def values(self, *names: str) -> list[Word]:
        return [value for name, value in self.flags if name in names and value is not None]

    def texts(self) -> list[str]:
        return [w.text or "" for w in self.pos]


def opts(args: Sequence[Word], short: str = "", long: Iterable[str] = (), *, optional: str = "", posix: bool = False,
         dash_long: Iterable[str] = ()) -> Opts:
    """getopt: ``short`` letters and ``long`` names take a value; ``optional`` letters take one only
    when attached; ``posix`` stops at the first operand; ``dash_long`` are ``-name`` options."""
    long, dash_long = frozenset(long), frozenset(dash_long)
    flags: list[tuple[str, Word | None]] = []
    pos: list[Word] = []
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
                flags.append((name, lit(value)))
            elif name in long or name in dash_long:
                flags.append((name, nxt))
                i += 1
            else:
                flags.append((name, None))
        else:
            for j, letter in enumerate(text[1:], 1):
                rest = text[j + 1 :]
                if letter in short:
                    flags.append(("-" + letter, lit(rest) if rest else nxt))
                    i += 0 if rest else 1
                    break
                if letter in optional:
                    flags.append(("-" + letter, lit(rest) if rest else None))
                    break
                flags.append(("-" + letter, None))
        i += 1
    return Opts(flags, pos)


def runs_each(words: Sequence[Word], via: str, placeholder: str | None,
              run: Callable[[Sequence[Word], str], Verdict]) -> Verdict:
    """The command xargs, find -exec or fd -x runs (``run``) on what it finds: a deleter there deletes
    it, a shell there runs it (``xargs bash``, ``xargs -I{} sh -c '{}'``), as does ``xargs -I{} {}``."""
    head = words[0].text if words else None
    name = PurePosixPath(head).name if head is not None else ""
    if head is not None and placeholder and placeholder in head:
        return bad(f"runs what it reads as commands ({via} {words[0].show})")
    if name in SHELLS:
        o = opts(words[1:], "oO", ("--rcfile", "--init-file"), posix=True)
        first = "".join(" " + w.show for w in o.pos[:1])
        if not o.has("-c"):
            return bad(f"runs the scripts it finds ({via} {words[0].show}{first})")
        if placeholder and (not o.pos or o.pos[0].text is None or placeholder in o.pos[0].text):
            return bad(f"runs what it reads as shell code ({via} {words[0].show} -c{first})")
    verdict = run(words, via)
    if verdict[0] is not Danger.DANGEROUS and name in DELETERS:
        return bad(f"deletes what {via.split()[0]} finds ({via} {name})")
    if verdict[0] is not Danger.DANGEROUS and name in ("kill", "renice"):
        return bad(f"signals the processes it reads ({via} {name})")
    return verdict


@dataclass(frozen=True)
class Stdin:
    """Where a command's standard input comes from, when it matters (a shell reading a script)."""

    kind: Literal["pipe", "text", "file"]
    text: str | None  # heredoc or here-string value, file path; None when built at run time
    show: str = ""  # for reasons; for a pipe, the program feeding it


def stdin_of(redirects: list[tree_sitter.Node], stdin: Stdin | None) -> Stdin | None:
    for node in redirects:
        if node.type == "heredoc_redirect":
            stdin = Stdin("text", _heredoc_text(node), "<<")
        elif node.type == "herestring_redirect" and node.named_child_count:
            value = word_of(node.named_children[-1])
            stdin = Stdin("text", value.text, f"<<< {value.show}")
        elif node.type == "file_redirect":
            ops = [child.type for child in node.children if not child.is_named]
            descriptor = [node_text(c) for c in node.children if c.type == "file_descriptor"]
            dests = node.children_by_field_name("destination")
            if ops and ops[0] == "<" and descriptor in ([], ["0"]) and dests:
                path = word_of(dests[0])
                stdin = Stdin("file", path.text, f"< {path.show}")
    return stdin


def _heredoc_text(node: tree_sitter.Node) -> str | None:
    start = next((node_text(c) for c in node.children if c.type == "heredoc_start"), "")
    body = next((c for c in node.children if c.type == "heredoc_body"), None)
    if body is None:
        return ""
    if any(q in start for q in "'\"\\"):
        return node_text(body)
    if all(child.type == "heredoc_content" for child in body.named_children):
        return re.sub(r"\\([\\$`])", r"\1", node_text(body))
    return None  # expansions: the shell sees text built at run time


def program_of(stage: tree_sitter.Node) -> str:
    """The program a pipeline stage runs, without its directory ("" when not a simple command)."""
    body = stage.child_by_field_name("body") if stage.type == "redirected_statement" else stage
    words = command_words(body) if body is not None and body.type == "command" else []
    return PurePosixPath(words[0].text).name if words and words[0].text else ""


def printed_by(body: tree_sitter.Node | None, stdin: Stdin | None) -> str | None:
    """What a redirected command writes, when the line shows it: ``""`` for no command, ``:``,
    ``true`` and ``cat /dev/null``; a heredoc through ``cat``; ``echo`` of literal words."""
    if body is None:
        return ""
    words = command_words(body) if body.type == "command" and not body.children_by_field_name("redirect") else []
    if not words or any(w.text is None for w in words):
        return None
    name, args = PurePosixPath(words[0].text or "").name, [w.text or "" for w in words[1:]]
    if name in (":", "true", "false") or (name, args) in (("cat", ["/dev/null"]), ("echo", ["-n"]), ("printf", [""])):
        return ""
    if name == "cat":
        return stdin.text if not args and stdin is not None and stdin.kind == "text" else None
    if name == "echo" and not any(a.startswith("-") for a in args[:1]):
        return " ".join(args) + "\n"
    return None

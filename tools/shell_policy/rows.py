"""A rule of the gate as one row of data: programs, the subcommand or options it is about, the
verdict, the reason a person reads, and examples that must match and must not, checked when the
rules load (as Codex's ``execpolicy`` does), so a wrong row fails the import.

A row matches when its program is one of ``programs`` (after ``canonical``), its first operands
are one of ``sub`` (words, each may be a glob: ``"* describe-*"``), and one of ``flags`` is given
or ``pattern`` is found in its arguments (when given). ``wraps`` makes it a wrapper: what it runs
(the words after its options or after a flag, shell source in its operands or in an option's value,
a command run on each input) is judged in its place (``Wraps.judge``).
``writes`` names the words a program writes (``touch F``, ``sort -o F``): such a row asks when one is
outside the workspace or where a write persists; else it decides with its reason if it has one, and
if not, the call is at least MODERATE and the next rows are tried.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from functools import cached_property, reduce
from typing import Any

from tools.base import Danger
from tools.shell_policy.words import MODERATE, Verdict, Word, bad, lit, opts, runs_each, worse

# A check and a program's rule take walk.Call (named Any here: walk imports this module).
Check = Callable[[Any, Word], Verdict]

# Options that take a value, per program, so that a row finds the subcommand after them
# (``git -C repo push``: the subcommand is ``push``) and the words it ``writes``.
VALUE_OPTIONS: dict[str, tuple[str, tuple[str, ...]]] = {
    "git": ("Cc", ("--git-dir", "--work-tree", "--namespace", "--config-env", "--super-prefix")),
    "pip": ("tircefp", ("--target", "--prefix", "--root", "--index-url", "--extra-index-url", "--requirement",
                        "--constraint", "--editable", "--python")),
    "npm": ("w", ("--workspace", "--prefix", "--location")),
    "cargo": ("Z", ("--manifest-path", "--config", "--color")),
    "git push": ("o", ("--push-option", "--repo", "--receive-pack", "--exec")),
    "hg": ("R", ("--repository", "--cwd")),
    "svn": ("mF", ("--message", "--file", "--username", "--password")),
    "rclone": ("", ("--config", "--transfers", "--checkers", "--include", "--exclude")),
    "getent": ("s", ("--service",)),
    "helm": ("nf", ("--namespace", "--kube-context", "--kubeconfig", "--values", "--set", "--version", "--repo")),
    "pulumi": ("sC", ("--stack", "--cwd")),
    "gh": ("R", ("--repo",)),
    "uv": ("p", ("--python", "--project", "--directory")),
    "docker": ("Hclfp", ("--host", "--context", "--config", "--log-level", "--file", "--project-name", "--env-file")),
    "docker-compose": ("fp", ("--file", "--project-name", "--env-file")),
    "aws": ("", ("--profile", "--region", "--output", "--endpoint-url", "--query", "--color", "--ca-bundle",
                 "--cli-read-timeout", "--cli-connect-timeout", "--cli-binary-format")),
    **dict.fromkeys(("heroku", "flyctl", "vault"), ("ac", ("--app", "--config", "--address", "--namespace"))),
    "touch": ("dtr", ()), "gzip": ("S", ("--suffix",)), "mkdir": ("m", ("--mode", "--context")), "uniq": ("fsw", ()),
    "truncate": ("sr", ("--size", "--reference")), "xxd": ("cglosn", ()), "tree": ("LPIo", ()), "unzip": ("dxP", ()),
    "sort": ("kotST", ("--key", "--output", "--field-separator", "--buffer-size", "--temporary-directory",
                       "--files0-from", "--compress-program", "--parallel", "--batch-size", "--random-source")),
    "patch": ("pdioBrDFVYz", ()), "yq": ("oIpe", ("--output-format", "--indent", "--input-format", "--arg")),
    "zip": ("bnPtx", ("--password",)),
    "curl": ("AbcCdDeEFHKmoQrTtuUwxXyYzP", (
        "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii", "--json", "--form",
        "--form-string", "--upload-file", "--request", "--output", "--output-dir", "--header", "--user",
        "--user-agent", "--referer", "--cookie", "--cookie-jar", "--dump-header", "--config", "--max-time",
        "--connect-timeout", "--retry", "--proxy", "--write-out", "--url", "--cacert", "--cert", "--key",
        "--resolve", "--mail-rcpt", "--mail-from", "--trace", "--trace-ascii", "--stderr", "--range")),
    "wget": ("OPoaeUitTwQlADR", (
        "--output-document", "--directory-prefix", "--output-file", "--append-output", "--post-data", "--post-file",
        "--method", "--body-data", "--body-file", "--header", "--user-agent", "--execute", "--input-file", "--tries",
        "--timeout", "--user", "--password", "--level")),
    "kubectl": ("nslofcL", ("--namespace", "--context", "--cluster", "--kubeconfig", "--server", "--user", "--token",
                            "--selector", "--output", "--filename", "--container", "--as", "--as-group")),
}


@dataclass(frozen=True)
class Wraps:
    """How a wrapper's own options are read before what it runs, and what that is: the command
    after them, shell source, or a command run on each input (``judge``)."""

    short: str = ""  # letters that take a value
    long: tuple[str, ...] = ()  # names that take a value
    optional: str = ""  # letters that take a value only when attached (``xargs -i{}``)
    skip: int = 0  # operands of its own before the command (``setarch ARCH cmd``)
    skip_writes: bool = False  # those operands of its own are files it writes (``flock FILE cmd``)
    take: int = 0  # only the first operands run, the rest are its own (``trap CMD SIGNAL``)
    floor: Danger = Danger.SAFE  # at least this, whatever it runs (``strace`` writes a trace)
    via: bool = True  # name the wrapper in the reason (``in chrt: ...``)
    env: bool = False  # its leading ``VAR=value`` operands are the command's environment (``env``)
    after: tuple[str, ...] = ()  # it runs each command between one of these and ``;``/``+`` (``find -exec``)
    shell: bool = False  # its operands are joined and parsed as shell (``eval``)
    argv: tuple[str, ...] = ()  # options that make them a command instead (``watch -x``)
    code: tuple[str, ...] = ()  # options whose value is shell source, its operands after it (``env -S``, ``script -c``)
    each: tuple[str, ...] = ()  # it runs the command on each input line, placed by these options (``xargs -I{}``)
    until: tuple[str, ...] = ()  # the command ends at one of these, each word after is an input (``parallel :::``)
    reads: tuple[str, ...] = ()  # options and markers before a file of inputs (``parallel -a``, ``::::``)

    def judge(self, c: Any, floor: Verdict) -> Verdict:
        """At least ``floor``, and the verdict of what the wrapper ``c`` (a ``walk.Call``) runs."""
        if self.after:  # find -exec CMD ;, fd -x CMD: each runs on what it finds
            args, verdict, i = c.args, floor, 0
            while i < len(args):
                if args[i].text in self.after:
                    end = next((j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args))
                    verdict, i = worse(verdict, c.each(args[i + 1 : end], f"{c.name} {args[i].text}")), end
                i += 1
            return verdict
        o = opts(c.args, self.short, self.long, optional=self.optional, posix=True)
        rest, given = o.pos, o.flags
        if self.skip:  # its options may follow its operands too: ``setarch x86_64 -R cmd``
            again = opts(rest[self.skip :], self.short, self.long, optional=self.optional, posix=True)
            if self.skip_writes:
                floor = worse(floor, c.targets_outside(rest[: self.skip], c.name))
            rest, given = again.pos, given + again.flags
        rest, named = rest[: self.take or None], [name for name, _ in given]
        if any(name in self.code for name in named):
            source = [value for name, value in given if name in self.code and value is not None][:1]
            return worse(floor, c.joined(source + rest, f"{c.name} {self.code[0]}"))
        if self.shell and not any(name in self.argv for name in named):
            return worse(floor, c.joined(rest, c.name))
        if self.until:
            return worse(floor, self._inputs(c, rest, named))
        if self.each:  # with -I, its input goes in place of that
            marks = [value.text if value is not None else "{}" for name, value in given if name in self.each]
            return worse(floor, c.each(rest, c.name, marks[0] if marks else None))
        env = list(c.env) if self.env else None
        while env is not None and rest and re.match(r"-$|[A-Za-z_]\w*=", rest[0].text or ""):  # ``-`` is ``-i``
            name, eq, value = (rest.pop(0).text or "").partition("=")
            env += [(name, lit(value))] if eq else []
        return worse(floor, c.run(rest, c.name if self.via else "", c.stdin, env)) if rest else floor

    def _inputs(self, c: Any, rest: list[Word], named: list[str]) -> Verdict:
        """``parallel CMD ::: a b``: CMD is shell run on each input, ``{}`` standing for it (a deleter
        deletes them); with no CMD each input is a command, and those read from a file or pipe are unseen."""
        cut = next((i for i, w in enumerate(rest) if w.text in self.until), len(rest))
        if cut:
            head = rest[0].text
            try:  # ``parallel 'sh -c {}'``: its first word may be several
                seen = [lit(part) for part in shlex.split(head)] + rest[1:cut] if head else rest[:cut]
            except ValueError:
                seen = rest[:cut]
            return runs_each(seen, c.name, "{}", lambda _, via: c.joined(rest[:cut], via))
        unseen = any(x in self.reads for x in [*named, *(w.text for w in rest)])
        if unseen or c.stdin is not None and c.stdin.kind != "text":
            return bad(f"runs commands read from its input ({c.name})")
        return reduce(worse, (c.joined([w], c.name) for w in rest if w.text not in self.until), MODERATE)


@dataclass(frozen=True)
class Row:
    kind: str  # what docs/safety.md groups it under
    programs: tuple[str, ...]
    reason: str  # ``{name}``, ``{sub}`` and ``{word}`` are filled in; empty for a wrapper, MODERATE or writes row
    match: tuple[str, ...]  # command lines this row must decide
    not_match: tuple[str, ...]  # similar lines it must not
    sub: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    pattern: str = ""
    verdict: Danger = Danger.DANGEROUS
    wraps: Wraps | None = None
    worse: bool = False  # what it matches makes a call worse: an allow rule must name it (``shape.py``)
    writes: str = ""  # option values (``-o``; ``-o*`` attached), operands by slice (``1:2``), ``!-c``: then none

    @cached_property
    def compiled(self) -> re.Pattern[str] | None:
        return re.compile(self.pattern) if self.pattern else None

    @property
    def phrase(self) -> str:
        """The reason without its parenthesised detail: what a matched example must show."""
        return self.reason.split(" (")[0] if self.reason else "writes outside the workspace" if self.writes else ""

    def marks(self, args: Sequence[Word]) -> list[str]:
        """What in ``args`` makes this row match: its flags given, and the pattern's hits."""
        texts = [a.text if a.text is not None else a.raw for a in args]
        found = [t for t in texts if any(flag_given(t, flag) for flag in self.flags)]
        if self.compiled is not None:
            found += [hit.group(0).strip() for hit in self.compiled.finditer(" ".join(texts))]
        return found

    def matches(self, program: str, args: Sequence[Word]) -> tuple[str, str] | None:
        """(the subcommand, the word that matched) when the row applies, else None."""
        if program not in self.programs:
            return None
        short, long = VALUE_OPTIONS.get(program, ("", ()))
        top = opts(args, short, long, posix=True).pos
        operands = [w.text or "" for w in top[:1] + opts(top[1:], short, long).pos]
        sub = operands[0] if operands else ""
        if self.sub:
            path = next((p.split() for p in self.sub if words_match(p.split(), operands)), None)
            if path is None:
                return None
            sub = " ".join(operands[: len(path)])
        if not self.flags and not self.pattern:
            return sub, ""
        found = self.marks(args)
        return (sub, found[0]) if found else None

    def written(self, name: str, program: str, args: Sequence[Word], word: str) -> tuple[str, list[Word]]:
        """The words ``writes`` names, and how a reason names the write (``sort -o``, ``yq -i``, ``touch``):
        none unless one of ``flags`` is given as getopt reads it, nor when a ``!`` option is (``gzip -c``)."""
        items = self.writes.split()
        o, found = opts(args, *VALUE_OPTIONS.get(program, ("", ()))), []
        if self.flags and not o.has(*self.flags) or o.has(*(item[1:] for item in items if item[0] == "!")):
            return "", []
        for item in items:
            if ":" in item:  # operands, by a slice
                start, end = (int(n) if n else None for n in item.split(":"))
                found += o.pos[start:end]
            elif item.endswith("*"):  # an option's value only when attached (``7z -o/x``)
                n = len(item) - 1
                found += [Word(w.text[n:], w.raw[n:]) for w in args if w.text and w.text.startswith(item[:n])]
            else:
                found += o.values(item)
        return f"{name} {word or ('' if ':' in items[0] else items[0].rstrip('*'))}".strip(), found

    def shown(self, name: str, sub: str, word: str) -> str:
        return " ".join(self.reason.format(name=name, sub=sub, word=word).split()).replace(" )", ")")


def words_match(path: Sequence[str], operands: Sequence[str]) -> bool:
    """Whether the first operands are ``path``, a word each, each may be a glob (``* describe-*``)."""
    return len(operands) >= len(path) and all(fnmatchcase(o, p) for o, p in zip(operands, path, strict=False))


def flag_given(text: str, flag: str) -> bool:
    """Whether a word gives ``flag``: ``--name`` or ``--name=v``; ``-x`` alone, in a cluster
    (``-fu``) or with its value attached; a longer single-dash name (``-ex``) exactly."""
    if flag.startswith("--") or len(flag) > 2:
        return text == flag or text.startswith(flag + "=")
    return len(text) > 1 and text[0] == "-" and text[1] != "-" and flag[1] in text[1:]


def row(kind: str, programs: str, reason: str, match: Iterable[str], not_match: Iterable[str], **kw) -> Row:
    """A row, written compactly: ``programs`` space-separated, the examples any iterable."""
    return Row(kind, tuple(programs.split()), reason, tuple(match), tuple(not_match), **kw)


def verify(rows: Iterable[Row], classify: Callable[[str], Verdict]) -> None:
    """Every row has at least two examples that must match and one that must not, and the
    classifier decides them so. ValueError naming the row and the example otherwise."""
    for each in rows:
        label = f"row {each.kind!r} for {' '.join(each.programs)} ({each.reason or each.verdict.value})"
        if len(each.match) < 2 or len(each.not_match) < 1:
            raise ValueError(f"{label}: needs two examples that match and one that does not")
        for example in (*each.match, *each.not_match):
            danger, reason = classify(example)
            decided = danger is each.verdict and each.phrase in reason
            if decided != (example in each.match):
                should = "match" if example in each.match else "not match"
                raise ValueError(f"{label}: {example!r} should {should}, but is {danger.value}: {reason!r}")


def by_program(rows: Iterable[Row]) -> dict[str, list[Row]]:
    found: dict[str, list[Row]] = {}
    for each in rows:
        for program in each.programs:
            found.setdefault(program, []).append(each)
    return found


def readme_table(rows: Iterable[Row]) -> str:
    """docs/safety.md's table of the gate's rows, one line per kind: its programs, and an example of
    each way it decides (generated by ``python -m benchmarks.docs``, so the page says what the rows say)."""
    kinds: dict[str, list[Row]] = {}
    for each in rows:
        kinds.setdefault(each.kind, []).append(each)
    lines = ["| kind | programs | decides | for example | but not |", "|---|---|---|---|---|"]
    for kind, members in kinds.items():
        programs = list(dict.fromkeys(p for r in members for p in r.programs))
        shown = ", ".join(f"`{p}`" for p in programs[:10]) + (", …" if len(programs) > 10 else "")
        decides = "/".join(dict.fromkeys(r.verdict.value for r in members))
        examples = list(dict.fromkeys(r.match[0] for r in members))[:4]
        counter = list(dict.fromkeys(r.not_match[0] for r in members))[:2]
        cell = ", ".join(f"`{e}`".replace("|", "\\|") for e in examples)
        lines.append(f"| {kind} | {shown} | {decides} | {cell} | "
                     + ", ".join(f"`{e}`".replace("|", "\\|") for e in counter) + " |")
    return "\n".join(lines)


@dataclass(frozen=True)
class Table:
    """What ``evaluate`` looks a program up in: the checks every command passes; the code for a
    program, whose asking stands; else the first of its rows that matches; else whether it only
    reads (else MODERATE)."""

    rules: Mapping[str, Callable[[Any], Verdict | None]]
    read_only: frozenset[str]
    checks: Sequence[Check] = ()
    rows: Mapping[str, Sequence[Row]] = field(default_factory=dict)

"""Wrappers and nested shells: programs that run another command (``env``, ``nohup``, ``timeout``,
``xargs``, ``find -exec``, ``watch``) or shell source (``bash -c``, ``eval``, ``trap``), judged by
what they run; and ``sudo`` and its kin, which run it as another user."""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Iterable, Sequence
from pathlib import PurePosixPath

from tools.base import Danger
from tools.shell_policy.paths import _path_of
from tools.shell_policy.scripts import _runs_input
from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad, _worse
from tools.shell_policy.walk import _Call
from tools.shell_policy.words import _lit, _opts, _Word


def _as_user(c: _Call) -> Verdict:
    return _bad(f"runs as another user ({c.name})")


def _wrapper(short: str = "", long: Iterable[str] = ()) -> Callable[[_Call], Verdict]:
    """A program that runs the rest of its words as a command, after its options (``nohup``, ``nice``)."""

    def rule(c: _Call) -> Verdict:
        return c.run(_opts(c.args, short, long, posix=True).pos, stdin=c.stdin)

    return rule


def _env(c: _Call) -> Verdict:
    o = _opts(c.args, "uCS", ("--unset", "--chdir", "--split-string"), posix=True)
    if o.has("-S", "--split-string"):
        return c.joined(o.values("-S", "--split-string") + o.pos, "env -S")
    rest, env = list(o.pos), list(c.env)
    while rest and (text := rest[0].text) is not None and re.match(r"[A-Za-z_]\w*=", text):
        name, _, value = text.partition("=")
        env.append((name, _lit(value)))
        rest.pop(0)
    return c.run(rest, stdin=c.stdin, env=env)


def _command_builtin(c: _Call) -> Verdict:
    o = _opts(c.args, posix=True)
    return SAFE if o.has("-v", "-V") else c.run(o.pos, stdin=c.stdin)


def _exec(c: _Call) -> Verdict:
    rest = _opts(c.args, "a", posix=True).pos
    return c.run(rest, stdin=c.stdin) if rest else SAFE


def _timeout(c: _Call) -> Verdict:
    rest = _opts(c.args, "sk", ("--signal", "--kill-after"), posix=True).pos
    return c.run(rest[1:], stdin=c.stdin)


def _ionice(c: _Call) -> Verdict:
    o = _opts(c.args, "cnp", ("--class", "--classdata", "--pid"), posix=True)
    return MODERATE if o.has("-p", "--pid") else c.run(o.pos, stdin=c.stdin)


def _busybox(c: _Call) -> Verdict:
    return c.run(c.args, stdin=c.stdin)


_DELETERS = frozenset({"rm", "unlink", "shred", "srm", "wipe"})


def _runs_each(c: _Call, words: Sequence[_Word], via: str, placeholder: str | None = "{}") -> Verdict:
    """The command xargs, find -exec, fd -x or parallel runs; a deleter there deletes what they find,
    a shell there runs what they find (``xargs -I{} sh -c '{}'``)."""
    runs_input = _runs_input(c, list(words), via, placeholder)
    if runs_input is not None:
        return runs_input
    verdict = c.run(words, via)
    head = words[0].text if words else None
    deleter = PurePosixPath(head).name if head is not None else ""
    if verdict[0] is not Danger.DANGEROUS and deleter in _DELETERS:
        return _bad(f"deletes what {via.split()[0]} finds ({via} {deleter})")
    if verdict[0] is not Danger.DANGEROUS and deleter in ("kill", "renice"):
        return _bad(f"signals the processes it reads ({via} {deleter})")
    return verdict


def _xargs(c: _Call) -> Verdict:
    o = _opts(
        c.args, "InPLsdEa", ("--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof",
                             "--arg-file", "--process-slot-var"), optional="ile", posix=True,
    )
    replace = [(v.text if v is not None else "{}") for n, v in o.flags if n in ("-I", "-i", "--replace")]
    placeholder = replace[0] if replace else None  # with -I, xargs puts its input in place of this
    return _runs_each(c, o.pos, "xargs", placeholder)


def _find(c: _Call) -> Verdict:
    verdict, args, i = SAFE, c.args, 0
    while i < len(args):
        text = args[i].text
        if text == "-delete":
            return _bad("deletes files (find -delete)")
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args))
            inner = args[i + 1 : end]
            verdict = _worse(verdict, _runs_each(c, inner, f"find {text}"))
            i = end
        elif text in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            verdict = _worse(verdict, c.targets_outside([args[i + 1]], f"find {text}"))
        i += 1
    return verdict


def _fd(c: _Call) -> Verdict:
    for i, w in enumerate(c.args):
        if w.text in ("-x", "--exec", "-X", "--exec-batch"):
            inner = [x for x in c.args[i + 1 :] if x.text != ";"]
            return _runs_each(c, inner, f"fd {w.text}")
    return SAFE


def _watch(c: _Call) -> Verdict:
    o = _opts(c.args, "nq", ("--interval", "--equexit"), optional="d", posix=True)
    if o.has("-x", "--exec"):
        return c.run(o.pos, "watch")
    return c.joined(o.pos, "watch")


def _flock(c: _Call) -> Verdict:
    o = _opts(c.args, "wE", ("--wait", "--timeout", "--conflict-exit-code"), posix=True)
    if not o.pos:
        return MODERATE
    verdict, rest = c.targets_outside(o.pos[:1], "flock"), o.pos[1:]
    if rest and rest[0].text in ("-c", "--command"):
        return _worse(verdict, c.joined(rest[1:2], "flock -c"))
    return _worse(verdict, c.run(rest, "flock"))


def _parallel(c: _Call) -> Verdict:
    o = _opts(
        c.args, "jSaIdnNL", ("--jobs", "--sshlogin", "--arg-file", "--colsep", "--delimiter", "--joblog",
                             "--results", "--timeout", "--halt", "--max-args", "--sshloginfile"), posix=True,
    )
    if o.has("-S", "--sshlogin", "--sshloginfile"):
        return _bad("runs commands on remote hosts (parallel -S)")
    command = []
    for w in o.pos:
        if w.text in (":::", "::::", ":::+", "::::+"):
            break
        command.append(w)
    if not command:  # each argument is a command
        rest = o.pos[1:]
        if c.stdin is not None and c.stdin.kind != "text" or o.has("-a", "--arg-file") or (
                o.pos[:1] and o.pos[0].text in ("::::", "::::+")):
            return _bad("runs commands read from its input (parallel)")
        return _worse(MODERATE, _worst([c.joined([w], "parallel") for w in rest if w.text not in (":::", ":::+")]))
    runs_input = _runs_input(c, _split(command), "parallel", "{}")
    if runs_input is not None:
        return runs_input
    verdict = c.joined(command, "parallel")
    head = command[0].text or ""
    if verdict[0] is not Danger.DANGEROUS and PurePosixPath(head.split()[0] if head.split() else "").name in _DELETERS:
        return _bad(f"deletes what parallel finds (parallel {head.split()[0]})")
    return verdict


def _split(words: list[_Word]) -> list[_Word]:
    """``parallel 'sh -c {}'``: a one-word command is shell words."""
    if len(words) != 1 or words[0].text is None:
        return words
    try:
        return [_lit(part) for part in shlex.split(words[0].text)]
    except ValueError:
        return words


def _worst(verdicts: list[Verdict]) -> Verdict:
    verdict = SAFE
    for one in verdicts:
        verdict = _worse(verdict, one)
    return verdict


def _runs_rest(skip: int = 0, short: str = "", long: Iterable[str] = ()) -> Callable[[_Call], Verdict]:
    """A tool that runs the rest of its words as a command after ``skip`` operands of its own
    (``taskset MASK cmd``, ``strace -o f cmd``): at least MODERATE, judged as that command."""

    def rule(c: _Call) -> Verdict:
        o = _opts(c.args, short, long, posix=True)
        return _worse(MODERATE, c.run(o.pos[skip:], c.name, c.stdin)) if len(o.pos) > skip else MODERATE

    return rule


def _script(c: _Call) -> Verdict:
    """``script -c CMD file``: a command run under a recorded terminal."""
    o = _opts(c.args, "cEIOTt", ("--command", "--echo", "--log-in", "--log-out", "--log-timing", "--timing"))
    commands = o.values("-c", "--command")
    return _worse(MODERATE, c.joined(commands[:1], "script -c")) if commands else MODERATE


def _eval(c: _Call) -> Verdict:
    return c.joined(c.args, "eval")


def _trap(c: _Call) -> Verdict:
    o = _opts(c.args)
    if o.has("-l", "-p") or len(o.pos) < 2 or o.pos[0].text in ("-", ""):
        return SAFE
    return c.joined(o.pos[:1], "trap")


def _cd(c: _Call) -> Verdict:
    o = _opts(c.args)
    target = o.pos[0] if o.pos else _lit("~")
    c.scan.moved = True
    if target.text == "-" or c.outside(target):
        c.scan.cwd_outside = True
    path = _path_of(target) if target.text not in (None, "-") else None
    if path is None or path.startswith(("/", "~")):
        c.scan.cwd = path and posixpath.normpath(path)
    else:  # relative to where it was: `cd .git && echo x > hooks/pre-commit` writes .git/hooks
        c.scan.cwd = None if c.scan.cwd_outside and c.scan.cwd is None else posixpath.normpath(
            posixpath.join(c.scan.cwd or ".", path))
    return SAFE

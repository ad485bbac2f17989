"""What runs other commands and needs code to say so: ``env``, ``xargs``, ``watch``, ``flock``,
``parallel``, ``trap``, ``script -c`` (the plain wrappers, ``find -exec``, ``fd -x`` and ``eval`` are
rows); ``cd``, which moves where paths resolve; and variables that name a command (``PAGER=``) or
load code (``LD_PRELOAD``), or a relative ``PATH``, which make a read run something else.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable
from pathlib import PurePosixPath

from tools.base import Danger
from tools.shell_policy.infrastructure import GIT_COMMAND_CONFIG
from tools.shell_policy.paths import RELATIVE_PATH, path_of
from tools.shell_policy.rows import Row, Wraps, row
from tools.shell_policy.scripts import run_script
from tools.shell_policy.walk import Call
from tools.shell_policy.words import DELETERS, MODERATE, SAFE, Verdict, Word, bad, input_as_code, lit, opts, worse


def _env(c: Call) -> Verdict:
    o = opts(c.args, "uCS", ("--unset", "--chdir", "--split-string"), posix=True)
    if o.has("-S", "--split-string"):
        return c.joined(o.values("-S", "--split-string") + o.pos, "env -S")
    rest, env = list(o.pos), list(c.env)
    while rest and (text := rest[0].text) is not None and re.match(r"[A-Za-z_]\w*=", text):
        name, _, value = text.partition("=")
        env.append((name, lit(value)))
        rest.pop(0)
    return c.run(rest, stdin=c.stdin, env=env)


def _xargs(c: Call) -> Verdict:
    o = opts(
        c.args, "InPLsdEa", ("--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof",
                             "--arg-file", "--process-slot-var"), optional="ile", posix=True,
    )
    replace = [(v.text if v is not None else "{}") for n, v in o.flags if n in ("-I", "-i", "--replace")]
    return c.each(o.pos, "xargs", replace[0] if replace else None)  # with -I, its input goes in place of that


def _find(c: Call) -> Verdict | None:
    """``find -fprint FILE`` writes FILE (``-exec`` and ``-delete`` are rows)."""
    verdict = None
    for i, w in enumerate(c.args[:-1]):
        if w.text in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            verdict = worse(verdict or SAFE, c.targets_outside([c.args[i + 1]], f"find {w.text}"))
    return verdict


def _watch(c: Call) -> Verdict:
    o = opts(c.args, "nq", ("--interval", "--equexit"), optional="d", posix=True)
    if o.has("-x", "--exec"):
        return c.run(o.pos, "watch")
    return c.joined(o.pos, "watch")


def _flock(c: Call) -> Verdict:
    o = opts(c.args, "wE", ("--wait", "--timeout", "--conflict-exit-code"), posix=True)
    if not o.pos:
        return MODERATE
    verdict, rest = c.targets_outside(o.pos[:1], "flock"), o.pos[1:]
    if rest and rest[0].text in ("-c", "--command"):
        return worse(verdict, c.joined(rest[1:2], "flock -c"))
    return worse(verdict, c.run(rest, "flock"))


def _parallel(c: Call) -> Verdict:
    o = opts(
        c.args, "jSaIdnNL", ("--jobs", "--sshlogin", "--arg-file", "--colsep", "--delimiter", "--joblog",
                             "--results", "--timeout", "--halt", "--max-args", "--sshloginfile"), posix=True,
    )
    if o.has("-S", "--sshlogin", "--sshloginfile"):
        return bad("runs commands on remote hosts (parallel -S)")
    command = []
    for w in o.pos:
        if w.text in (":::", "::::", ":::+", "::::+"):
            break
        command.append(w)
    if not command:  # each argument is a command
        rest = o.pos[1:]
        if c.stdin is not None and c.stdin.kind != "text" or o.has("-a", "--arg-file") or (
                o.pos[:1] and o.pos[0].text in ("::::", "::::+")):
            return bad("runs commands read from its input (parallel)")
        return worse(MODERATE, _worst([c.joined([w], "parallel") for w in rest if w.text not in (":::", ":::+")]))
    runs_input = input_as_code(_split(command), "parallel", "{}")
    if runs_input is not None:
        return runs_input
    verdict = c.joined(command, "parallel")
    head = command[0].text or ""
    if verdict[0] is not Danger.DANGEROUS and PurePosixPath(head.split()[0] if head.split() else "").name in DELETERS:
        return bad(f"deletes what parallel finds (parallel {head.split()[0]})")
    return verdict


def _split(words: list[Word]) -> list[Word]:
    """``parallel 'sh -c {}'``: a one-word command is shell words."""
    if len(words) != 1 or words[0].text is None:
        return words
    try:
        return [lit(part) for part in shlex.split(words[0].text)]
    except ValueError:
        return words


def _worst(verdicts: list[Verdict]) -> Verdict:
    verdict = SAFE
    for one in verdicts:
        verdict = worse(verdict, one)
    return verdict


def _script(c: Call) -> Verdict:
    """``script -c CMD file``: a command run under a recorded terminal."""
    o = opts(c.args, "cEIOTt", ("--command", "--echo", "--log-in", "--log-out", "--log-timing", "--timing"))
    commands = o.values("-c", "--command")
    return worse(MODERATE, c.joined(commands[:1], "script -c")) if commands else MODERATE


def _trap(c: Call) -> Verdict:
    o = opts(c.args)
    if o.has("-l", "-p") or len(o.pos) < 2 or o.pos[0].text in ("-", ""):
        return SAFE
    return c.joined(o.pos[:1], "trap")


def _cd(c: Call) -> Verdict:
    o = opts(c.args)
    target = o.pos[0] if o.pos else lit("~")
    c.scan.moved = True
    if target.text == "-" or c.outside(target):
        c.scan.cwd_outside = True
    path = path_of(target) if target.text not in (None, "-") else None
    if path is None or path.startswith(("/", "~")):
        c.scan.cwd = path and posixpath.normpath(path)
    else:  # relative to where it was: `cd .git && echo x > hooks/pre-commit` writes .git/hooks
        c.scan.cwd = None if c.scan.cwd_outside and c.scan.cwd is None else posixpath.normpath(
            posixpath.join(c.scan.cwd or ".", path))
    return SAFE


_RUNS = frozenset(
    """PAGER GIT_PAGER MANPAGER SYSTEMD_PAGER LESSOPEN LESSCLOSE GIT_EXTERNAL_DIFF GIT_SSH_COMMAND GIT_SSH
    GIT_EDITOR GIT_SEQUENCE_EDITOR EDITOR VISUAL GIT_ASKPASS SSH_ASKPASS SUDO_ASKPASS PROMPT_COMMAND
    GIT_PROXY_COMMAND BROWSER""".split()
)
_LOADS = frozenset(
    """LD_PRELOAD LD_AUDIT LD_LIBRARY_PATH PYTHONSTARTUP PYTHONPATH PYTHONHOME NODE_OPTIONS PERL5OPT PERL5LIB
    RUBYOPT RUBYLIB GIT_EXEC_PATH GIT_TEMPLATE_DIR GIT_DIR GIT_CONFIG GIT_CONFIG_GLOBAL GIT_CONFIG_SYSTEM
    RIPGREP_CONFIG_PATH""".split()
)


def command_variables(c: Call, head: Word) -> Verdict:
    verdict = SAFE
    for name, value in c.env:
        if name in ("BASH_ENV", "ENV"):  # a script the shell sources first
            verdict = worse(verdict, run_script(c, value) if value.text else MODERATE)
        elif name == "PATH" and re.search(RELATIVE_PATH, f"PATH={value.raw}"):
            return bad(f"changes what a command name runs (PATH={value.show})")
        elif name in _RUNS:
            if value.text is None:
                return bad(f"runs a command built at run time ({name}={value.show})")
            verdict = worse(verdict, c.nested(value.text.lstrip("|"), f"{name}="))  # LESSOPEN='|cmd %s'
        elif re.fullmatch(r"GIT_CONFIG_(PARAMETERS|KEY_\d+|VALUE_\d+)", name):
            if value.text is None or GIT_COMMAND_CONFIG.match(value.text.strip("'")) or (
                    name.startswith("GIT_CONFIG_VALUE") and _sets_command(c, name)):
                return bad(f"runs a command set through git config ({name}={value.show})")
            verdict = worse(verdict, MODERATE)
        elif name in _LOADS:
            verdict = worse(verdict, MODERATE)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return verdict


def _sets_command(c: Call, value_name: str) -> bool:
    """GIT_CONFIG_VALUE_n: whether its GIT_CONFIG_KEY_n names a key that runs commands."""
    key = dict(c.env).get(value_name.replace("VALUE", "KEY"))
    return key is None or key.text is None or bool(GIT_COMMAND_CONFIG.match(key.text + "="))


# What a command name runs: a hashed path, an alias, a disabled builtin, a relative PATH.
RENAMING: list[Row] = [
    row("changes what a name runs", "hash", "changes what a command name runs ({name} {word})",
        ["hash -p /bin/rm ls", "hash -p ./x ls"], ["hash -r", "hash"], flags=("-p",)),
    row("changes what a name runs", "alias", "changes what a command name runs ({name})",
        ["alias ls='rm -rf x'", "alias g=git ll='ls -l'"], ["alias", "alias ll"], pattern="="),
    row("changes what a name runs", "enable", "changes what a command name runs ({name} {word})",
        ["enable -n echo", "enable -f ./x.so x"], ["enable -p", "enable"], flags=("-n", "-f", "-d")),
    row("changes what a name runs", "export declare typeset readonly local", "changes what a command name runs ({name} {word})",
        ["export PATH=.:$PATH", "declare -x PATH=bin", "export PATH=/usr/bin:"],
        ["export PATH=/usr/local/bin:$PATH", "export FOO=1"], pattern=RELATIVE_PATH),
]
_W, _M = Wraps, Danger.MODERATE
# Wrappers: the command after their options is judged as if it ran alone.
WRAPPERS: list[Row] = [
    *(row("wrapper", name, "", [f"{name} {pre}rm -rf x", f"{name} {pre}git push"], [f"{name} {pre}ls"],
          wraps=wraps) for name, pre, wraps in (
        ("nohup", "", _W(via=False)), ("nice", "-n 10 ", _W("n", ("--adjustment",), via=False)),
        ("stdbuf", "-oL ", _W("ioe", ("--input", "--output", "--error"), via=False)),
        ("builtin", "", _W(via=False)), ("time", "-o t.txt ", _W("of", ("--output", "--format"), via=False)),
        ("setsid", "", _W(via=False)), ("chronic", "", _W(via=False)), ("unbuffer", "", _W(via=False)),
        ("coproc", "", _W(via=False)), ("busybox", "", _W(via=False)), ("exec", "", _W("a", via=False)),
        ("ionice", "-c3 ", _W("cnp", ("--class", "--classdata", "--pid"), via=False)),
        ("timeout", "-s KILL 10 ", _W("sk", ("--signal", "--kill-after"), skip=1, via=False)),
        ("taskset", "-c 0 ", _W(skip=1, floor=_M)), ("chrt", "10 ", _W(skip=1, floor=_M)),
        ("numactl", "--cpunodebind=0 ", _W(floor=_M)), ("unshare", "-r ", _W(floor=_M)), ("fakeroot", "", _W(floor=_M)),
        ("firejail", "", _W(floor=_M)), ("catchsegv", "", _W(floor=_M)), ("dbus-run-session", "", _W(floor=_M)),
        ("strace", "-o t.txt ", _W("oeEpsuabIOSXP", floor=_M)), ("ltrace", "-o t.txt ", _W("oeEpsuaAnS", floor=_M)),
        ("valgrind", "", _W(floor=_M)),
        ("xvfb-run", "-a ", _W("snfepw", ("--server-args", "--server-num", "--auth-file", "--error-file"), floor=_M)),
        ("prlimit", "--nproc=64 ", _W("p", ("--pid", "--output"), floor=_M)),
        ("setarch", "x86_64 -R ", _W(skip=1, floor=_M)), ("linux32", "", _W(floor=_M)), ("linux64", "", _W(floor=_M)),
        ("setpriv", "--no-new-privs ", _W(long=("--reuid", "--regid", "--ruid", "--euid", "--rgid", "--egid",
                                                 "--groups", "--inh-caps", "--ambient-caps", "--bounding-set",
                                                 "--securebits", "--pdeathsig", "--selinux-label",
                                                 "--apparmor-profile"), floor=_M)),
        ("choom", "-n 100 -- ", _W("np", ("--adjust", "--pid"), floor=_M)),
    )),
    row("deletes", "find", "deletes files ({name} -delete)", ["find . -delete", "find . -name '*.pyc' -delete"],
        ["find . -name x"], flags=("-delete",)),
    row("wrapper", "find", "", ["find . -exec rm -rf {} \\;", "find . -name x -execdir git push \\;"],
        ["find . -exec grep -l x {} +"], flags=("-exec", "-execdir", "-ok", "-okdir"),
        wraps=_W(after=("-exec", "-execdir", "-ok", "-okdir"))),
    row("wrapper", "fd", "", ["fd -e pyc -x rm", "fd . -X git push"], ["fd -x ls"],
        flags=("-x", "--exec", "-X", "--exec-batch"), wraps=_W(after=("-x", "--exec", "-X", "--exec-batch"))),
    row("wrapper", "eval", "", ["eval 'rm -rf x'", "eval git push"], ["eval ls"], wraps=_W(shell=True)),
]


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict | None]] = {
    "script": _script, "env": _env,
    "command": lambda c: SAFE if (o := opts(c.args, posix=True)).has("-v", "-V") else c.run(o.pos, stdin=c.stdin),
    "xargs": _xargs, "find": _find, "watch": _watch, "flock": _flock, "parallel": _parallel,
    "trap": _trap, "cd": _cd, "pushd": _cd,
}

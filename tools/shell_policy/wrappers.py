"""What runs other commands: ``env``, ``xargs``, ``find -exec``, ``watch``, ``flock``,
``parallel``, ``eval``, ``trap`` and ``script -c``, judged by what they run (the plain wrappers,
``nice`` and its kin, are rows); ``cd``, which moves where paths resolve; and variables that
name a command (``PAGER=... git log``, ``GIT_EXTERNAL_DIFF``) or load code (``LD_PRELOAD``), or
a relative ``PATH``, which make a read run something else.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import PurePosixPath

from tools.base import Danger
from tools.shell_policy.infrastructure import GIT_COMMAND_CONFIG
from tools.shell_policy.paths import RELATIVE_PATH, path_of
from tools.shell_policy.rows import Row, Wraps, row
from tools.shell_policy.scripts import SHELLS, run_script
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, lit, opts, worse


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


def _command_builtin(c: Call) -> Verdict:
    o = opts(c.args, posix=True)
    return SAFE if o.has("-v", "-V") else c.run(o.pos, stdin=c.stdin)


def _input_as_code(c: Call, words: list[Word], via: str, placeholder: str | None) -> Verdict | None:
    """What xargs or find -exec runs when its input becomes code: ``xargs -I{} sh -c '{}'``,
    ``xargs -I{} {}``, ``xargs bash`` (each input a script). None when it does not."""
    head = words[0].text if words else None
    if head is None:
        return None
    if placeholder and placeholder in head:
        return bad(f"runs what it reads as commands ({via} {words[0].show})")
    if PurePosixPath(head).name not in SHELLS:
        return None
    o = opts(words[1:], "oO", ("--rcfile", "--init-file"), posix=True)
    if not o.has("-c"):
        scripts = "".join(" " + w.show for w in o.pos[:1])
        return bad(f"runs the scripts it finds ({via} {words[0].show}{scripts})")
    code = o.pos[0].text if o.pos else None
    if placeholder and (code is None or placeholder in code):
        return bad(f"runs what it reads as shell code ({via} {words[0].show} -c {o.pos[0].show})")
    return None


_DELETERS = frozenset({"rm", "unlink", "shred", "srm", "wipe"})


def _runs_each(c: Call, words: Sequence[Word], via: str, placeholder: str | None = "{}") -> Verdict:
    """The command xargs, find -exec, fd -x or parallel runs; a deleter there deletes what they find,
    a shell there runs what they find (``xargs -I{} sh -c '{}'``)."""
    runs_input = _input_as_code(c, list(words), via, placeholder)
    if runs_input is not None:
        return runs_input
    verdict = c.run(words, via)
    head = words[0].text if words else None
    deleter = PurePosixPath(head).name if head is not None else ""
    if verdict[0] is not Danger.DANGEROUS and deleter in _DELETERS:
        return bad(f"deletes what {via.split()[0]} finds ({via} {deleter})")
    if verdict[0] is not Danger.DANGEROUS and deleter in ("kill", "renice"):
        return bad(f"signals the processes it reads ({via} {deleter})")
    return verdict


def _xargs(c: Call) -> Verdict:
    o = opts(
        c.args, "InPLsdEa", ("--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof",
                             "--arg-file", "--process-slot-var"), optional="ile", posix=True,
    )
    replace = [(v.text if v is not None else "{}") for n, v in o.flags if n in ("-I", "-i", "--replace")]
    placeholder = replace[0] if replace else None  # with -I, xargs puts its input in place of this
    return _runs_each(c, o.pos, "xargs", placeholder)


def _find(c: Call) -> Verdict:
    verdict, args, i = SAFE, c.args, 0
    while i < len(args):
        text = args[i].text
        if text == "-delete":
            return bad("deletes files (find -delete)")
        if text in ("-exec", "-execdir", "-ok", "-okdir"):
            end = next((j for j in range(i + 1, len(args)) if args[j].text in (";", "+")), len(args))
            inner = args[i + 1 : end]
            verdict = worse(verdict, _runs_each(c, inner, f"find {text}"))
            i = end
        elif text in ("-fprint", "-fprint0", "-fprintf", "-fls") and i + 1 < len(args):
            verdict = worse(verdict, c.targets_outside([args[i + 1]], f"find {text}"))
        i += 1
    return verdict


def _fd(c: Call) -> Verdict:
    for i, w in enumerate(c.args):
        if w.text in ("-x", "--exec", "-X", "--exec-batch"):
            inner = [x for x in c.args[i + 1 :] if x.text != ";"]
            return _runs_each(c, inner, f"fd {w.text}")
    return SAFE


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
    runs_input = _input_as_code(c, _split(command), "parallel", "{}")
    if runs_input is not None:
        return runs_input
    verdict = c.joined(command, "parallel")
    head = command[0].text or ""
    if verdict[0] is not Danger.DANGEROUS and PurePosixPath(head.split()[0] if head.split() else "").name in _DELETERS:
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


def _eval(c: Call) -> Verdict:
    return c.joined(c.args, "eval")


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
]


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict]] = {
    "script": _script, "env": _env, "command": _command_builtin,
    "xargs": _xargs, "find": _find, "fd": _fd, "watch": _watch, "flock": _flock, "parallel": _parallel,
    "eval": _eval, "trap": _trap, "cd": _cd, "pushd": _cd,
}

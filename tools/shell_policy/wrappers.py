"""What runs other commands: the wrappers, one row each (``nohup``, ``env``, ``xargs``, ``watch``,
``flock``, ``parallel``, ``trap``, ``script -c``, ``find -exec``, ``eval``...; ``rows.Wraps`` says how
each is read); and the code rows can't say: ``cd``, which moves where paths resolve, and variables
that name a command (``PAGER=``) or load code (``LD_PRELOAD``), or a relative ``PATH``, which make
a read run something else.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Callable

from tools.base import Danger
from tools.shell_policy.infrastructure import GIT_COMMAND_CONFIG
from tools.shell_policy.paths import RELATIVE_PATH, path_of
from tools.shell_policy.rows import Row, Wraps, row
from tools.shell_policy.scripts import run_script
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad, lit, opts, worse


def _find(c: Call) -> Verdict | None:
    """``find -fprint FILE`` writes FILE (``-exec`` and ``-delete`` are rows)."""
    verdict = None
    for i, w in enumerate(c.args[:-1]):
        if w.text in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            verdict = worse(verdict or SAFE, c.targets_outside([c.args[i + 1]], f"find {w.text}"))
    return verdict


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
# Wrappers: what they run (the command after their options, shell source, a command on each input)
# is judged in their place.
WRAPPERS: list[Row] = [
    row("reads", "command", "", ["command -v rm", "command -p -V git"], ["command rm x"], verdict=Danger.SAFE,
        pattern=r"^(?:-\w+ )*-\w*[vV]"),  # ``command -v x`` says what x is; ``command x`` runs it
    row("reads", "trap", "", ["trap -p EXIT", "trap - INT", "trap"], ["trap cleanup EXIT"], verdict=Danger.SAFE,
        pattern=r"^(?:-[lp]|(?:-- )?- |\S*$)"),  # lists or resets traps; ``trap CMD SIGNAL`` sets one
    *(row("wrapper", name, "", [f"{name} {pre}rm -rf x", f"{name} {pre}git push"], [f"{name} {pre}ls"],
          wraps=wraps) for name, pre, wraps in (
        ("nohup", "", _W(via=False)), ("nice", "-n 10 ", _W("n", ("--adjustment",), via=False)),
        ("stdbuf", "-oL ", _W("ioe", ("--input", "--output", "--error"), via=False)),
        ("builtin", "", _W(via=False)), ("command", "-p ", _W(via=False)),
        ("time", "-o t.txt ", _W("of", ("--output", "--format"), via=False)),
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
    row("wrapper", "env", "", ["env -i PATH=/bin rm -rf x", "env - rm -rf x", "env -S 'git push'",
                               "env PAGER='rm -rf ~' git log"], ["env FOO=1 ls", "env"], wraps=_W("uCS", ("--unset", "--chdir", "--split-string"), env=True, via=False,
                                           code=("-S", "--split-string"))),
    row("wrapper", "xargs", "", ["ls | xargs rm", "xargs -I{} sh -c '{}' < cmds.txt", "xargs -0 git push"],
        ["xargs grep x < files.txt", "xargs -I{} cp {} out/"],
        wraps=_W("InPLsdEa", ("--max-args", "--max-procs", "--max-lines", "--max-chars", "--delimiter", "--eof",
                              "--arg-file", "--process-slot-var"), optional="ile", each=("-I", "-i", "--replace"))),
    row("wrapper", "watch", "", ["watch -n 5 'kubectl delete pod x'", "watch -x git push"], ["watch -n 1 'ls | wc -l'"],
        wraps=_W("nq", ("--interval", "--equexit"), optional="d", shell=True, argv=("-x", "--exec"))),
    row("wrapper", "flock", "", ["flock /tmp/lock git push", "flock x.lock -c 'rm -rf y'", "flock ~/.lock ls"],
        ["flock x.lock make"], wraps=_W("wEc", ("--wait", "--timeout", "--conflict-exit-code", "--command"), skip=1,
                                        skip_writes=True, code=("-c", "--command"), floor=_M)),
    row("wrapper", "script", "", ["script -qc 'git push' /dev/null", "script log -c 'rm -rf x'"], ["script -c ls log"],
        wraps=_W("cEIOTt", ("--command", "--echo", "--log-in", "--log-out", "--log-timing", "--timing"), skip=1,
                 code=("-c", "--command"), floor=_M)),
    row("wrapper", "trap", "", ["trap 'rm -rf x' EXIT", "trap -- 'git push' INT TERM"], ["trap 'echo done' EXIT"],
        wraps=_W(shell=True, take=1)),
    row("sends data over the network", "parallel", "runs commands on remote hosts ({name} {word})",
        ["parallel -S host ls ::: a", "parallel --sshlogin=host echo ::: a"], ["parallel echo ::: a"],
        flags=("-S", "--sshlogin", "--sshloginfile")),
    row("wrapper", "parallel", "", ["parallel 'rm -rf {}' ::: a b", "parallel ::: 'git push' ls",
                                    "parallel :::: cmds.txt"], ["parallel gzip ::: a.log", "parallel ::: ls pwd"],
        wraps=_W("jSaIdnNL", ("--jobs", "--sshlogin", "--arg-file", "--colsep", "--delimiter", "--joblog", "--results",
                              "--timeout", "--halt", "--max-args", "--sshloginfile"),
                 until=(":::", "::::", ":::+", "::::+"), reads=("-a", "--arg-file", "::::", "::::+"))),
]


# The programs this module judges, by name (``table.py`` gathers them).
RULES: dict[str, Callable[[Call], Verdict | None]] = {"find": _find, "cd": _cd, "pushd": _cd}

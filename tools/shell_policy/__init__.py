"""Which shell commands ask before they run, and why (docs/safety.md, "Approvals").

The line is parsed with tree-sitter-bash and every simple command in it is judged wherever it
sits (lists, pipelines, bodies, substitutions, redirection targets, heredocs), by its name
(``/bin/rm`` is ``rm``); wrappers, ``xargs``, ``find -exec`` and nested shells are seen through,
up to four levels. The rules are rows of data (``table.py``; a wrapper is a row saying how it is
read, ``rows.Wraps``) whose examples are checked when this package is imported (``rows.py``), so
a wrong row fails the import instead of letting a command through; code is left for what rows
can't say. What can't be seen through asks: a line that
does not parse, is too long or too deep, or builds its command at run time.

SAFE (never asks, may be rerun after a crash) is only the plainly read-only; MODERATE is what the
sandbox bounds (``make``, ``pytest``, ``sed -i``), where the unknown falls. Without a sandbox only
what cannot run other code runs (``runs_no_code``): no git, pager, wrapper or program by path.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tools.base import Danger
from tools.shell_policy import infrastructure, scripts, services, wrappers, writes
from tools.shell_policy.paths import reads_secret
from tools.shell_policy.rows import by_program, verify
from tools.shell_policy.scripts import by_path
from tools.shell_policy.services import sends_runtime, venv_install
from tools.shell_policy.table import ROWS
from tools.shell_policy.walk import MAX_CHARS, Call, Table, classify
from tools.shell_policy.words import MODERATE, SAFE, Verdict, bad
from tools.shell_policy.wrappers import command_variables

__all__ = ["MAX_CHARS", "TABLE", "Verdict", "classify_command", "is_read_only", "runs_no_code"]

READ_ONLY = frozenset(
    """ls ll dir vdir cat tac head tail wc grep ag ack pwd echo printf stat file du df which whereis type
    whoami id groups uname printenv diff cmp comm cut tr jq less more most bat sha1sum sha224sum sha256sum
    sha384sum sha512sum md5sum b2sum cksum sum basename dirname realpath readlink true false test [ seq column
    nl od hexdump hd strings rev fold fmt expand unexpand paste join look zcat bzcat xzcat zgrep zless ps
    pgrep lsof free uptime w who users locale nproc lscpu lsblk lsmod getconf arch tty sleep wait : pushd popd
    dirs set shopt read help apropos whatis cal jobs hash export declare typeset readonly local date hostname
    history sysctl find fd sort uniq xxd tree yq""".split()
)

RULES: dict[str, Callable[[Call], Verdict | None]] = {
    **wrappers.RULES, **scripts.RULES, **writes.RULES, **services.RULES, **infrastructure.RULES,
}

# Every command, whatever its program: secret files named, scripts run by path, run-time values in a
# network lookup or request, variables naming a command to run, installs into the workspace's venv.
CHECKS = (reads_secret, by_path, sends_runtime, command_variables, venv_install)
TABLE = Table(RULES, READ_ONLY, CHECKS, by_program(ROWS))


def classify_command(command: str, workspace: Path | None = None) -> Verdict:
    """The danger of a command line and the reason a person reads when asked to approve it.

    The reason is empty for SAFE and MODERATE. Never raises: what can't be inspected is DANGEROUS.
    With ``workspace``, a script the command runs from there is shown in the reason (its danger
    is the same either way).
    """
    return _guarded(command, TABLE, workspace)


def is_read_only(command: str) -> bool:
    """Whether the command only reads (classified SAFE), so it may be rerun after a crash."""
    return classify_command(command)[0] is Danger.SAFE


def runs_no_code(command: str) -> bool:
    """Whether the command only reads and cannot run other code (no git, pager, wrapper, xargs,
    nested shell...): what runs when there is no sandbox to bound it."""
    return is_read_only(command) and _guarded(command, NO_CODE, None)[0] is Danger.SAFE


def _guarded(command: str, table: Table, workspace: Path | None) -> Verdict:
    try:
        return classify(command, table, 0, workspace=workspace)
    except RecursionError:
        return bad("nested too deeply to see through")
    except Exception:  # a classifier bug must ask, not crash the activity deciding on approval
        return bad("could not be inspected")


def _strict(rule: Callable[[Call], Verdict | None], *risky: str) -> Callable[[Call], Verdict | None]:
    """A rule that is MODERATE when any of these arguments is given (``find -exec``, ``env CMD``)."""

    def strict(c: Call) -> Verdict | None:
        return MODERATE if any((w.text or "").split("=")[0] in risky for w in c.args) else rule(c)

    return strict


# Without a sandbox only what cannot run code counts as read-only: no git (hooks, fsmonitor,
# textconv and pagers set in a config the agent can write), no pager or man, no wrapper, xargs,
# find -exec, nested shell or cloud CLI (credential plugins), no program named by a path.
NO_CODE = Table(
    {
        **{name: RULES[name] for name in ("tee", "sed", "rg", "cd", "pushd")},
        "find": _strict(RULES["find"], "-exec", "-execdir", "-ok", "-okdir"),
        "fd": _strict(lambda c: None, "-x", "--exec", "-X", "--exec-batch"),
        # ``env`` and ``command -v x`` run nothing; with a command they are wrappers
        "env": lambda c: MODERATE if c.args else SAFE,
        "command": lambda c: SAFE if [w.text for w in c.args[:1]] in (["-v"], ["-V"]) else MODERATE,
    },
    READ_ONLY - {"less", "more", "most", "bat", "zless", "help", "man"},
    CHECKS,
    by_program(r for r in ROWS if r.wraps is None and r.verdict is not Danger.SAFE),
)

verify(ROWS, classify_command)  # a row whose examples the gate decides otherwise fails the import

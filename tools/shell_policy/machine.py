"""The machine: disks and filesystems, permissions and owners, services, signals, scheduled jobs,
the clock, the hostname and the shell history."""

from __future__ import annotations

import re

from tools.shell_policy.verdict import MODERATE, SAFE, Verdict, _bad
from tools.shell_policy.walk import _Call
from tools.shell_policy.words import _opts


def _date(c: _Call) -> Verdict:
    return MODERATE if _opts(c.args, "dfr").has("-s", "--set") else SAFE


def _hostname(c: _Call) -> Verdict:
    return SAFE if not _opts(c.args).pos else MODERATE


def _history(c: _Call) -> Verdict:
    return _bad("clears the shell history (history -c)") if _opts(c.args).has("-c") else SAFE


def _disk(c: _Call) -> Verdict:
    if c.name == "mount" and not c.args:
        return SAFE
    return _bad(f"changes disks or filesystems ({c.name})")


_OCTAL_MODE = re.compile(r"[0-7]{3,4}")


def _chmod(c: _Call) -> Verdict:
    o = _opts(c.args, long=("--reference",))
    if o.has("-R", "--recursive"):
        return _bad("changes permissions recursively (chmod -R)")
    operands = list(o.pos)
    # `chmod -w f`, `chmod -x f`: the mode looks like an option
    symbolic = [f"-{name[1:]}" for name, _ in o.flags if re.fullmatch(r"-[rwxXst]", name)]
    mode = symbolic[0] if symbolic else (operands.pop(0).text or "" if operands and not o.has("--reference") else "")
    if _OCTAL_MODE.fullmatch(mode):
        if int(mode[-1]) & 2:
            return _bad(f"makes files world-writable (chmod {mode})")
        if len(mode) == 4 and int(mode[0]) & 6:
            return _bad(f"sets setuid or setgid bits (chmod {mode})")
    for clause in mode.split(","):
        match = re.fullmatch(r"([ugoa]*)([-+=])([rwxXstugo]*)", clause)
        if not match:
            continue
        who, op, perms = match.groups()
        if op != "-" and "s" in perms:
            return _bad(f"sets setuid or setgid bits (chmod {clause})")
        if op != "-" and "w" in perms and ("o" in who or "a" in who):
            return _bad(f"makes files world-writable (chmod {clause})")
    for target in operands:
        if c.outside(target):
            return _bad(f"changes permissions outside the workspace (chmod {target.show})")
    return MODERATE


def _owner(c: _Call) -> Verdict:
    return _bad(f"changes owners or permissions ({c.name})")


def _machine(c: _Call) -> Verdict:
    return _bad(f"controls the machine or its services ({c.name})")


_SERVICE_READS = frozenset(
    {"status", "show", "list-units", "list-unit-files", "list-timers", "list-sockets", "list-dependencies",
     "is-active", "is-enabled", "is-failed", "cat", "--status-all", "help"}
)


def _services(c: _Call) -> Verdict:
    words = [w.text or "" for w in c.args if not (w.text or "").startswith("-") or w.text == "--status-all"]
    verb = words[1] if c.name == "service" and len(words) > 1 else (words or ["status"])[0]
    return SAFE if verb in _SERVICE_READS else _machine(c)


def _sysctl(c: _Call) -> Verdict:
    o = _opts(c.args)
    return _machine(c) if o.has("-w", "--write", "-p", "--load") or any("=" in t for t in o.texts()) else SAFE


def _kill(c: _Call) -> Verdict:
    """``kill -9 -1`` and ``kill -1`` signal every process; in ``kill -1 123``, -1 is SIGHUP."""
    texts = [w.text for w in c.args]
    return _bad("kills every process (kill -1)") if "-1" in texts[1:] or texts == ["-1"] else MODERATE


def _crontab(c: _Call) -> Verdict:
    o = _opts(c.args, "u")
    if o.has("-l") and not o.has("-r"):
        return SAFE
    return _bad(f"changes scheduled jobs (crontab {o.flags[0][0] if o.flags else ' '.join(o.texts())})".strip())

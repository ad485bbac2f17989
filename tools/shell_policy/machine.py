"""The machine: disks and filesystems, permissions and owners, services, signals, scheduled jobs,
the clock, the hostname and the shell history."""

from __future__ import annotations

import re

from tools.base import Danger
from tools.shell_policy.walk import Call
from tools.shell_policy.words import MODERATE, SAFE, Verdict, bad, opts
from tools.shell_policy.writes import mode_risk


def _chmod(c: Call) -> Verdict:
    o = opts(c.args, long=("--reference",))
    if o.has("-R", "--recursive"):
        return bad("changes permissions recursively (chmod -R)")
    for reference in o.values("--reference"):
        if c.outside(reference):
            return bad(f"copies the mode of an outside file (chmod --reference={reference.show})")
    operands = list(o.pos)
    # `chmod -w f`, `chmod -x f`: the mode looks like an option
    symbolic = [f"-{name[1:]}" for name, _ in o.flags if re.fullmatch(r"-[rwxXst]", name)]
    mode = symbolic[0] if symbolic else (operands.pop(0).text or "" if operands and not o.has("--reference") else "")
    risk = mode_risk(mode)
    if risk:
        return bad(f"{risk} (chmod {mode})")
    for target in operands:
        if c.outside(target):
            return bad(f"changes permissions outside the workspace (chmod {target.show})")
    for target in operands:  # a script made executable here and run next asks (scripts.py)
        verdict = c.scan.wrote(target, "chmod", keep=True)
        if verdict[0] is Danger.DANGEROUS:
            return verdict
    return MODERATE












_OWN_JOB = re.compile(r'"?(\$!|\$\{!\}|\$\$|\$\{?\w+\}?)"?')


def _kill(c: Call) -> Verdict:
    """``kill -9 -1`` and ``kill -1`` signal every process; in ``kill -1 123``, -1 is SIGHUP. A
    literal PID is a process this line did not start (each command's processes end with it);
    ``%1``, ``$!`` and a variable holding it are its own."""
    texts = [w.text for w in c.args]
    if "-1" in texts[1:] or texts == ["-1"]:
        return bad("kills every process (kill -1)")
    o = opts(c.args, "sn", ("--signal",))
    groups = [w for w in c.args[1:] if re.fullmatch(r"-\d+", w.text or "")]  # after the signal: -PGID
    for target in [*o.pos, *groups]:
        if target.text is None:
            if _OWN_JOB.fullmatch(target.raw):
                continue
            return bad(f"signals processes found at run time (kill {target.show})")
        if re.fullmatch(r"-?\d+", target.text) and target.text != "0":
            return bad(f"signals a process it did not start (kill {target.show})")
    return MODERATE






def _crontab(c: Call) -> Verdict:
    o = opts(c.args, "u")
    if o.has("-l") and not o.has("-r"):
        return SAFE
    return bad(f"changes scheduled jobs (crontab {o.flags[0][0] if o.flags else ' '.join(o.texts())})".strip())

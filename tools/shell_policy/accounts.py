"""Accounts and privilege: adding or changing users, groups and passwords (``useradd``, ``passwd``,
``visudo``), file capabilities (``setcap``), setuid and setgid modes however they are spelled (``chmod 4755``, ``u+s``, ``install
-m 4755``, ``mkdir -m 2775``), and copying an outside file with its mode kept (``cp -p
/usr/bin/passwd .``), which makes a root-owned setuid binary out of a system one."""

from __future__ import annotations

import re
from collections.abc import Sequence

from tools.shell_policy.verdict import MODERATE, Verdict, _bad
from tools.shell_policy.walk import _Call
from tools.shell_policy.words import _opts, _Word

ACCOUNT_PROGRAMS = frozenset(
    """useradd adduser usermod userdel deluser groupadd addgroup groupmod groupdel delgroup passwd chpasswd
    chage chsh chfn gpasswd newusers vipw vigr visudo pwconv grpconv setcap""".split()
)


def _accounts(c: _Call) -> Verdict:
    o = _opts(c.args, "cdegGkKpsuUbfL", ("--comment", "--home", "--home-dir", "--shell", "--uid", "--gid",
                                         "--groups", "--password", "--expiredate", "--inactive", "--key"))
    uids = [w.text.lstrip("0") for w in o.values("-u", "--uid") if w.text]
    if c.name in ("useradd", "usermod", "adduser") and "" in uids:
        spelled = " -o" if o.has("-o", "--non-unique") else ""
        return _bad(f"creates or makes a second root account ({c.name}{spelled} -u 0)")
    if c.name == "passwd" and o.has("-S", "--status") and not o.has("-d", "-l", "-u", "-e"):
        return MODERATE
    if c.name == "setcap":
        return _bad("gives a program privileges (setcap)")
    return _bad(f"changes accounts or passwords ({c.name})")


def _mode_risk(mode: str) -> str | None:
    """Why a chmod-style mode (``4755``, ``u+s``, ``o+w``) is risky, or None."""
    if re.fullmatch(r"[0-7]{1,6}", mode):
        bits = int(mode, 8)
        if bits & 0o002:
            return "makes files world-writable"
        return "sets setuid or setgid bits" if bits & 0o6000 else None
    for clause in mode.split(","):
        match = re.fullmatch(r"([ugoa]*)((?:[-+=][rwxXstugo]*)+)", clause)
        if not match:
            continue
        who, actions = match.groups()
        for op, perms in re.findall(r"([-+=])([rwxXstugo]*)", actions):
            if op != "-" and "s" in perms:
                return "sets setuid or setgid bits"
            if op != "-" and "w" in perms and ("o" in who or "a" in who):
                return "makes files world-writable"
    return None


def _modes(c: _Call, modes: Sequence[_Word]) -> Verdict:
    """``install -m``, ``mkdir -m``: DANGEROUS for setuid, setgid or world-writable modes."""
    for mode in modes:
        if mode.text is None:
            return _bad(f"sets a mode built at run time ({c.name} -m {mode.show})")
        risk = _mode_risk(mode.text)
        if risk:
            return _bad(f"{risk} ({c.name} -m {mode.show})")
    return MODERATE


_PRESERVES = re.compile(r"-[a-zA-Z]*[ap][a-zA-Z]*|--archive|--perms|--preserve(?:=.*(?:mode|all|ownership).*)?")


def _keeps_mode(c: _Call, sources: Sequence[_Word]) -> Verdict:
    """``cp -p``/``-a``/``--preserve``, ``rsync -a``/``-p`` of a file from outside the workspace."""
    flags = [w.text or "" for w in c.args if (w.text or "").startswith("-")]
    keeping = [f for f in flags if _PRESERVES.fullmatch(f) and not f.startswith("--no-")]
    if not keeping or any(f.startswith("--no-preserve") or f == "--no-perms" for f in flags):
        return MODERATE
    for source in sources:
        if c.outside(source):
            return _bad(f"copies an outside file with its mode, setuid bits included ({c.name} {keeping[0]} "
                        f"{source.show})")
    return MODERATE

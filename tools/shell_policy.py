"""Which shell commands are dangerous, and why.

A command line is split into simple commands (at ``|``, ``&&``, ``||``, ``;``,
``&``) and each is looked at after leading ``VAR=value`` assignments and
wrappers (``env``, ``nohup``, ``time``, ``xargs``...). The command is
DANGEROUS, with the first matching reason, when any simple command:

| rule | examples |
|---|---|
| runs as another user | ``sudo``, ``su``, ``doas``, ``pkexec`` |
| deletes recursively or by force | ``rm -r``, ``rm -rf``, ``rm -f``, ``find ... -delete``, ``shred``, ``git clean -f`` |
| pushes or rewrites shared history | ``git push`` (any), ``git reset --hard``, any ``--force``/``-f`` to git |
| changes disks or filesystems | ``mkfs*``, ``dd``, ``fdisk``, ``parted``, ``mount``, ``umount``, ``swapon``, ``wipefs`` |
| changes permissions or owners | ``chmod -R``, ``chmod 777``, ``chown``, ``chgrp``, ``setfacl`` |
| controls the machine or its services | ``shutdown``, ``reboot``, ``halt``, ``poweroff``, ``systemctl``, ``service``, ``kill -9 -1``, ``killall`` |
| installs system packages | ``apt``/``apt-get``/``yum``/``dnf``/``pacman``/``brew`` with install or remove |
| pipes a download into a shell | ``curl ... \\| sh``, ``wget -O- ... \\| bash`` |
| writes outside the workspace | a redirection (``>``, ``>>``) or ``tee`` to an absolute path, ``~`` or ``..`` path, except ``/dev/null`` |

Everything else is MODERATE: it can change the workspace but is not
irreversible outside it. This is a heuristic on tokens, not a sandbox.
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePath

from tools.base import Danger

_SEPARATORS = frozenset("|&;()")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_WRAPPERS = frozenset({"env", "nohup", "time", "nice", "ionice", "xargs", "command", "exec", "timeout", "stdbuf"})
_SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "fish"})
_AS_USER = frozenset({"sudo", "su", "doas", "pkexec"})
_DISK = frozenset({"dd", "fdisk", "sfdisk", "parted", "mount", "umount", "swapon", "swapoff", "wipefs", "losetup"})
_MACHINE = frozenset({"shutdown", "reboot", "halt", "poweroff", "systemctl", "service", "killall", "pkill", "init"})
_PACKAGERS = frozenset({"apt", "apt-get", "yum", "dnf", "pacman", "brew", "zypper", "apk", "snap"})
_PACKAGE_VERBS = frozenset({"install", "remove", "purge", "erase", "uninstall", "upgrade", "dist-upgrade", "-S", "-R"})


def _tokens(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: split conservatively, separators included
        return re.findall(r"[|&;()]+|[^\s|&;()]+", command)


def _segments(tokens: list[str]) -> list[tuple[str, list[str]]]:
    segments: list[tuple[str, list[str]]] = [("", [])]
    for token in tokens:
        if token and set(token) <= _SEPARATORS:
            segments.append((token, []))
        else:
            segments[-1][1].append(token)
    return [(op, words) for op, words in segments if words]


def _program(words: list[str]) -> list[str]:
    i, wrapped = 0, False
    while i < len(words):
        word = words[i]
        if _ASSIGNMENT.match(word) or (wrapped and word.startswith("-")):
            i += 1
        elif PurePath(word).name in _WRAPPERS:
            i, wrapped = i + 1, True
        else:
            return [PurePath(word).name, *words[i + 1:]]
    return []


def _short_flags(words: list[str]) -> set[str]:
    return {c for w in words if w.startswith("-") and not w.startswith("--") for c in w[1:]}


def _git_subcommand(rest: list[str]) -> str:
    """``push`` in ``git -C repo -c k=v push``: options before the subcommand may take a value."""
    i = 0
    while i < len(rest) and rest[i].startswith("-"):
        i += 2 if rest[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return rest[i] if i < len(rest) else ""


def _outside(path: str) -> bool:
    if path in ("/dev/null", "/dev/stdout", "/dev/stderr") or path.startswith("/dev/fd/"):
        return False
    return path.startswith(("/", "~")) or ".." in PurePath(path).parts


def _rule(words: list[str]) -> str | None:
    name, rest = words[0], words[1:]
    flags = _short_flags(rest)
    if name in _AS_USER:
        return f"runs as another user ({name})"
    if name == "rm" and (flags & {"r", "R", "f"} or {"--recursive", "--force"} & set(rest)):
        return "deletes recursively or by force (rm)"
    if name == "find" and "-delete" in rest:
        return "deletes files (find -delete)"
    if name == "shred":
        return "destroys files (shred)"
    if name == "git":
        sub = _git_subcommand(rest)
        if sub == "push":
            return "pushes to a remote (git push)"
        if sub == "reset" and "--hard" in rest:
            return "discards work (git reset --hard)"
        if sub == "clean" and "f" in flags:
            return "deletes untracked files (git clean -f)"
        if "f" in flags or any(w.startswith("--force") for w in rest):
            return "forces a git operation"
    if name.startswith("mkfs") or name in _DISK:
        return f"changes disks or filesystems ({name})"
    if name in {"chown", "chgrp", "setfacl"}:
        return f"changes owners or permissions ({name})"
    if name == "chmod" and ("R" in flags or "--recursive" in rest or any(w.endswith("777") for w in rest)):
        return "changes permissions recursively or to world-writable (chmod)"
    if name in _MACHINE:
        return f"controls the machine or its services ({name})"
    if name == "kill" and "-1" in rest:
        return "kills every process (kill -1)"
    if name in _PACKAGERS and _PACKAGE_VERBS & set(rest):
        return f"installs or removes system packages ({name})"
    if name == "tee" and any(_outside(w) for w in rest if not w.startswith("-")):
        return "writes outside the workspace (tee)"
    return None


def _redirect_outside(tokens: list[str]) -> bool:
    for i, token in enumerate(tokens[:-1]):
        if token in (">", ">>", ">|", "&>", ">&") and _outside(tokens[i + 1]):
            return True
    return False


def classify_command(command: str) -> tuple[Danger, str]:
    """The danger of a command line and the reason (empty for MODERATE)."""
    tokens = _tokens(command)
    downloaded = False
    for op, words in _segments(tokens):
        program = _program(words)
        if not program:
            continue
        reason = _rule(program)
        if reason:
            return Danger.DANGEROUS, reason
        if op == "|" and downloaded and program[0] in _SHELLS:
            return Danger.DANGEROUS, "pipes a download into a shell"
        downloaded = downloaded or program[0] in {"curl", "wget"}
    if _redirect_outside(tokens):
        return Danger.DANGEROUS, "writes outside the workspace (redirection)"
    return Danger.MODERATE, ""

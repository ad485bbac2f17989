"""Paths that matter whatever the program: secret files, which ask to be named at all (their contents
would reach the model and the history); places where a write runs code later (git hooks, shell startup
files, ``.envrc``, systemd units, SSH keys), which ask even inside the workspace; and file modes that
make a setuid, setgid or world-writable file (``4755``, ``u+s``, ``cp -p`` of a system binary).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from tools.base import Danger
from tools.control_paths import named
from tools.shell_policy.rows import Row, row
from tools.shell_policy.words import MODERATE, SAFE, Verdict, Word, bad

# Home in all its spellings; /home/<user> and /root are someone's home too.
_HOME = re.compile(r"^(?:~[\w.-]*|\$HOME|\$\{HOME\}|/root|/home/[^/]+)(?=/|$)")
_RUNTIME = re.compile(r"\$\(\([^)]*\)\)|\$\([^)]*\)|`[^`]*`|\$\{[^}]*\}|\$[\w$!#?@*-]")

# Secret files, and directories of them (ending in ``/``); ``*`` is a glob.
_SECRETS = tuple(
    p.split("/") for p in """~/.ssh/ ~/.aws/ ~/.config/gcloud/ ~/.kube/ ~/.docker/ ~/.gnupg/ ~/.password-store/
    ~/.azure/ ~/.config/gh/ ~/.local/share/keyrings/ /etc/sudoers.d/ /etc/ssl/private/ /etc/kubernetes/
    /var/run/secrets/ /run/secrets/ /etc/shadow /etc/shadow- /etc/gshadow /etc/gshadow- /etc/sudoers
    /etc/security/opasswd /etc/ssh/ssh_host_*key /etc/rancher/k3s/k3s.yaml /proc/*/environ ~/.netrc ~/.pgpass
    ~/.my.cnf ~/.git-credentials ~/.npmrc ~/.pypirc ~/.vault-token ~/.boto ~/.s3cfg ~/.terraform.d/credentials.tfrc.json
    ~/.cargo/credentials ~/.cargo/credentials.toml ~/.gem/credentials ~/.config/rclone/rclone.conf""".split()
)
# An entry of PATH that is not absolute (``.``, ``bin``, an empty one): the workspace's files then
# run in place of commands.
RELATIVE_PATH = r"(?:^| )PATH=(?:[^ ]*:)?(?:(?=:|$| )|[^/~$: ]|\$(?!\{?(?:PATH|HOME)\b))"
_NOT_SECRET = re.compile(r"\.pub$|^known_hosts")

_SINKS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr", "/dev/tty", "-"})
HERE = re.compile(r'^"?(\$PWD|\$\{PWD\}|\$\(pwd\)|`pwd`)"?(/|$)')


def is_sink(w: Word) -> bool:
    return w.text is not None and (w.text in _SINKS or w.text.startswith("/dev/fd/"))


@dataclass
class Written:
    """A file the line writes: what it put there when it shows it, and how (for reasons)."""

    content: str | None
    how: str  # "redirection to", "curl -o", "chmod"


def path_key(w: Word) -> str | None:
    """A written or run path as one spelling (``./x.sh`` is ``x.sh``)."""
    return posixpath.normpath(w.text) if w.text else None


def path_of(w: Word) -> str | None:
    """The path a word names, home spelled ``~``; what is built at run time becomes ``*``."""
    raw = w.text
    if raw is None:
        raw = w.raw.replace('"', "").replace("'", "")
        raw = _RUNTIME.sub("*", re.sub(r"^(\$HOME|\$\{HOME\})(?=/|$)", "~", raw))
        if raw.startswith("*"):
            return None  # all of it built at run time: the other rules judge that
    elif "=" in raw and not raw.startswith(("/", "~", ".")):  # --file=PATH, if=PATH
        raw = raw.split("=", 1)[1]
    return _HOME.sub("~", re.sub(r"^/+", "/", raw))


def _braces(path: str) -> list[str]:
    """``/etc/{passwd,shadow}`` as the shell expands it (one level, a few alternatives)."""
    match = re.search(r"\{([^{}]*,[^{}]*)\}", path)
    if match is None:
        return [path]
    head, tail = path[: match.start()], path[match.end() :]
    return [p for alt in match.group(1).split(",")[:16] for p in _braces(head + alt + tail)][:64]


def _resolved(path: str, cwd: str | None) -> list[str]:
    """Where a path may point: itself when absolute, joined to where ``cd`` went, and for a
    climb out of the workspace (``../../etc/shadow``) both from the root and from home."""
    if cwd is not None:
        path = posixpath.join(cwd, path)
    if path.startswith(("/", "~")):
        return [posixpath.normpath(path)]
    parts = posixpath.normpath(path).split("/")
    if ".." not in parts:
        return []
    rest = "/".join(parts[len(parts) - parts[::-1].index("..") :])
    return [posixpath.normpath("/" + rest), posixpath.normpath("~/" + rest)]


def _names(parts: Sequence[str], known: Sequence[str]) -> bool:
    """Whether a path is a known secret file, or is in a secret directory (``known`` ending in ``""``);
    either may have globs, but ``*`` misses dot names."""
    if known[-1] == "":
        known, parts = known[:-1], parts[: len(known) - 1]
    return len(parts) == len(known) and all(
        given == name or (given.startswith(".") or not name.startswith("."))
        and (fnmatchcase(name, given) or fnmatchcase(given, name))
        for given, name in zip(parts, known, strict=True)
    )


def is_secret(w: Word, cwd: str | None = None) -> bool:
    """Whether a word names a well-known secret file (globs and run-time parts included)."""
    path = path_of(w)
    if path is None:
        return False
    candidates = (_HOME.sub("~", c).split("/") for each in _braces(path) for c in _resolved(each, cwd))
    return any(not _NOT_SECRET.search(parts[-1]) and any(_names(parts, known) for known in _SECRETS)
               for parts in candidates)


_RC_FILES = frozenset(
    """.bashrc .bash_profile .bash_login .bash_logout .bash_aliases .profile .zshrc .zshenv .zprofile .zlogin
    .zlogout .kshrc .mkshrc .cshrc .tcshrc .login .xprofile .xinitrc .xsession .xsessionrc .pam_environment
    config.fish""".split()
)


def persisting(w: Word, cwd: str | None = None) -> str | None:
    """What a write to this path would change that runs code later, or None."""
    path = w.text
    if path is None:
        return None
    parts = [p for p in _HOME.sub("~", path).split("/") if p not in ("", ".")]
    if cwd is not None and not path.startswith(("/", "~")):
        parts = cwd.split("/") + parts
    name = parts[-1] if parts else ""
    control = named(tuple(parts)) if not path.startswith(("/", "~")) and parts != [".git"] else None
    if control is not None:  # tools/control_paths.py: read-only in the sandbox unless approved
        return f"writes {'/'.join(parts[:len(control.parts)])} ({control.why})"
    if ".git" in parts:
        return "changes .git, where hooks and config run commands"
    if name in _RC_FILES or "fish" in parts and "conf.d" in parts:
        return f"changes a shell startup file ({name}), which runs in every new shell"
    if name == ".envrc":
        return "changes .envrc, which direnv runs when a person enters the directory"
    if "systemd" in parts and ({"system", "user"} & set(parts) or ".config" in parts):
        return "changes a systemd unit, which runs as a service"
    if ".ssh" in parts:
        return "changes SSH keys or configuration"
    if {"autostart", "LaunchAgents", "LaunchDaemons", "cron.d", "crontabs"} & set(parts):
        return "adds a job or login item that runs later"
    return None


# What the checks below judge: a walk.Call (named Any here: walk imports this module).
Command = Any


def reads_secret(c: Command, head: Word) -> Verdict:
    """Every command's arguments, and the values of its VAR=value assignments."""
    for w in [*c.args, *(value for _, value in c.env)]:
        if is_secret(w, c.cwd):
            return bad(f"reads a secret file ({c.name} {w.show})")
    return SAFE


def mode_risk(mode: str) -> str | None:
    """Why a chmod-style mode (``4755``, ``u+s``, ``o+w``) is risky, or None."""
    if re.fullmatch(r"[0-7]{1,6}", mode):
        bits = int(mode, 8)
        if bits & 0o002:
            return "makes files world-writable"
        return "sets setuid or setgid bits" if bits & 0o6000 else None
    for clause in mode.split(","):
        match = re.fullmatch(r"([ugoa]*)((?:[-+=][rwxXstugo]*)+)", clause)
        who, actions = match.groups() if match else ("", "")
        for perms in re.findall(r"[+=]([rwxXstugo]*)", actions):  # what ``+`` and ``=`` grant
            if "s" in perms:
                return "sets setuid or setgid bits"
            if "w" in perms and ("o" in who or "a" in who):
                return "makes files world-writable"
    return None


def check_modes(c: Command, modes: Sequence[Word]) -> Verdict:
    """``install -m``, ``mkdir -m``: DANGEROUS for setuid, setgid or world-writable modes."""
    for mode in modes:
        if mode.text is None:
            return bad(f"sets a mode built at run time ({c.name} -m {mode.show})")
        risk = mode_risk(mode.text)
        if risk:
            return bad(f"{risk} ({c.name} -m {mode.show})")
    return MODERATE


_PRESERVES = re.compile(r"-[a-zA-Z]*[ap][a-zA-Z]*|--archive|--perms|--preserve(?:=.*(?:mode|all|ownership).*)?")


def keeps_mode(c: Command, sources: Sequence[Word]) -> Verdict:
    """``cp -p``/``-a``/``--preserve``, ``rsync -a``/``-p`` of a file from outside the workspace."""
    flags = [w.text or "" for w in c.args if (w.text or "").startswith("-")]
    keeping = [f for f in flags if _PRESERVES.fullmatch(f)]
    if not keeping or any(f.startswith("--no-preserve") or f == "--no-perms" for f in flags):
        return MODERATE
    for source in sources:
        if c.outside(source):
            return bad(f"copies an outside file with its mode, setuid bits included ({c.name} {keeping[0]} "
                        f"{source.show})")
    return MODERATE


ACCOUNTS = """useradd adduser usermod userdel deluser groupadd addgroup groupmod groupdel delgroup passwd chpasswd
    chage chsh chfn gpasswd newusers vipw vigr visudo pwconv grpconv"""
# Accounts and privileges: every change asks; a second root account and setcap say so.
ACCOUNT_ROWS: list[Row] = [
    row("changes accounts or privileges", "useradd usermod adduser", "creates or makes a second root account ({name} {word})",
        ["useradd -o -u 0 x", "usermod -u 0 bob", "useradd -ou 0 -g 0 toor", "useradd --uid=000 x"], ["useradd -u 1000 bob"],
        pattern=r"(?:^| )(?:-[a-zA-Z]*u ?|--uid[= ])0+(?= |$)"),
    row("changes accounts or privileges", "setcap", "gives a program privileges ({name})",
        ["setcap cap_setuid+ep ./x", "setcap -r ./x"], ["getcap ./x"]),
    row("runs in the sandbox", "passwd", "", ["passwd -S bob", "passwd --status"], ["passwd -S -l bob", "passwd root"],
        verdict=Danger.MODERATE, pattern=r"^(?:-S|--status)(?: [^-]\S*)?$"),
    row("changes accounts or privileges", ACCOUNTS, "changes accounts or passwords ({name})",
        ["useradd bob", "adduser --disabled-password eve", "groupdel staff", "usermod -aG sudo bob", "userdel bob",
         "groupadd g", "passwd root", "chpasswd < users.txt", "visudo"], ["id bob", "passwd -S bob"]),
]

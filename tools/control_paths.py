"""Control files: the workspace paths whose contents later run code on the host or change what
the agent may do, read-only to a tool call unless the person approved that exact call.

The workspace is writable so the agent can work, but a few of its paths are not just work:
git runs ``.git/hooks`` and the commands ``.git/config`` names the next time a person commits,
direnv runs ``.envrc``, an editor runs the tasks in ``.vscode/``, Python runs every ``.pth``
file in a virtualenv's site-packages at each start, and ``.agent/`` holds the agent's own
permission rules and skills. A command the gate let through as ordinary (``python3 x.py``)
could write any of them without a parser ever seeing it, so they are listed here once, as data,
and enforced by construction (with the directory ``core.hooksPath`` names in ``.git/config``,
wherever it is in the workspace): the sandbox binds them read-only (``guard``, used by
``tools/shell.py``), the file tool refuses them (``named``), the shell classifier asks before a
command that names one as a write target, and docs/safety.md lists them (``readme_lines``; a test
keeps the two equal).

A missing control path cannot be bound as it is: a command could create it. For the ones read
while a task may still be running (``.agent``, and ``.git`` with its hooks, config and info)
the sandbox puts an empty read-only directory at the first missing component (``.git`` in a
fresh workspace, ``.git/hooks`` in a repository without hooks); bwrap makes the mount point in
the workspace, and ``release`` removes it after the command if it is still empty (in the
background: ``rmdir`` waits on the disk, so the result does not; the next ``guard`` waits for
it, and ``settle`` does). A directory,
never a file: git ignores empty directories, so ``git status`` and ``git add -A`` never see
one. The others only matter when a person acts later (enters the directory, opens the editor,
points ``core.hooksPath`` there, which is itself guarded), so a missing one is watched instead
of stood in for: made by an unapproved command, it is removed after it and the result says so.
That keeps a command's view of the workspace true: ``ls -a`` does not show six empty
directories the project does not have, and ``git clean`` does not trip over them. The directories between the workspace
and a control path are bound onto themselves (still writable) so none can be renamed away
(``mv .git old; mkdir .git``). ``.git/commondir`` cannot be stood in for (git refuses a
repository whose commondir it cannot read), so one that appears during an unapproved command
is removed after it and the result says so.

A control path reached through a symlink is bound where it resolves, when that is in the
workspace (outside it everything is read-only already). The link itself sits in a writable
directory and no mount can cover a symlink, so a command could replace it (``rm .git/hooks;
mkdir .git/hooks``): each such link is put back after the command, what replaced it removed,
and the result says so. Those two are undone rather than prevented: a worker that dies
between the command's end and the undo leaves them.
"""

from __future__ import annotations

import contextlib
import glob
import os
import re
import shutil
import stat
from collections import Counter
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Literal

VENV = "<venv>"  # each top-level directory of the workspace that holds a pyvenv.cfg


@dataclass(frozen=True)
class ControlPath:
    path: str  # relative to the workspace, "/"-separated; may hold globs and start with VENV
    why: str  # what a write there would do, for the person asked and the model refused
    # When it does not exist: "placeholder" (an empty read-only directory stands in),
    # "watch" (removed after an unapproved command that made it), "none" (nothing to guard).
    missing: Literal["placeholder", "watch", "none"] = "placeholder"

    @property
    def parts(self) -> tuple[str, ...]:
        return tuple(self.path.split("/"))


CONTROL_PATHS = (
    ControlPath(".agent", "the agent's permission rules and skills: what it may do"),
    ControlPath(".git/hooks", "git runs these hooks on the host"),
    ControlPath(".git/config", "names commands git runs on the host: hooksPath, fsmonitor, aliases, filters"),
    ControlPath(".git/info", "attributes that choose the filters and diff drivers git runs"),
    ControlPath(".git/commondir", "points git at another directory's config and hooks", "watch"),
    ControlPath(".gitmodules", "what git clones and checks out as submodules", "watch"),
    ControlPath(".husky", "hooks git runs when core.hooksPath points here", "watch"),
    ControlPath(".githooks", "hooks git runs when core.hooksPath points here", "watch"),
    ControlPath(".envrc", "direnv runs it when a person enters the directory", "watch"),
    ControlPath(".vscode", "editor tasks and settings that run commands when the project opens", "watch"),
    ControlPath(".idea", "editor run configurations and settings that run commands", "watch"),
    ControlPath(f"{VENV}/bin/activate*", "a person's shell runs it to activate the virtualenv", "none"),
    ControlPath(f"{VENV}/pyvenv.cfg", "chooses the Python the virtualenv runs", "none"),
    ControlPath(f"{VENV}/lib/python*/site-packages", "Python runs its .pth files at every start", "none"),
)
GIT_LINK = next(c for c in CONTROL_PATHS if c.path == ".git/commondir")


def named(rel: tuple[str, ...]) -> ControlPath | None:
    """The control path a workspace-relative path is or is inside, by name alone (``VENV``
    matches any top-level name), so the verdict is the same whatever the workspace holds. A
    file at ``.git`` is one too: it points git at another directory (a worktree's link)."""
    if rel == (".git",):
        return GIT_LINK
    for control in CONTROL_PATHS:
        pattern = control.parts
        if len(rel) >= len(pattern) and all(p == VENV or fnmatchcase(r, p) for r, p in zip(rel, pattern, strict=False)):
            return control
    return None


def refusal(raw: str, control: ControlPath) -> str:
    """What the file tool says when it does not write a control path."""
    return (f"{raw!r} is a control file ({control.path}: {control.why}); it is written only when the "
            "person approves this exact call: ask them, or explain why it is needed")


HINT = ("[{path} is read-only in the sandbox ({why}): it is written only when the person approves this exact "
        "call. Ask them, or explain why it is needed.]")
_FAILURES = ("Read-only file system", "Is a directory", "Device or resource busy")

How = Literal["pin", "ro", "empty"]  # pin: bound onto itself, still writable; empty: a placeholder


@dataclass(frozen=True)
class Mount:
    path: Path
    how: How
    why: str  # the control path's, for the hint


@dataclass(frozen=True)
class Guard:
    """What the sandbox binds for one command, and what to tidy after it."""

    workspace: Path
    mounts: tuple[Mount, ...]  # parents before what is inside them
    placeholders: tuple[Path, ...]  # made for this command (or held with another): removed when empty
    watched: tuple[tuple[Path, str | None], ...]  # to be as they are now: absent (None) or this symlink

    def hint(self, output: str) -> str:
        """A line for the model when the command failed writing a control path, else ""."""
        failed = [line for line in output.splitlines() if any(failure in line for failure in _FAILURES)]
        for mount in sorted(self.mounts, key=lambda m: -len(m.path.parts)):  # the deepest named first
            rel = str(mount.path.relative_to(self.workspace))
            if mount.how != "pin" and any(rel in line for line in failed):
                return HINT.format(path=rel, why=mount.why)
        return ""


_HOOKS_PATH = re.compile(r"^\s*hookspath\s*=(.*)$", re.I | re.M)
_HELD: Counter[Path] = Counter()  # placeholders of the commands running in this process
_TIDIER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="control-placeholders")  # releases in order
_TIDYING: list[Future[None]] = []  # placeholder removals not known to be done


def guard(workspace: Path) -> Guard:
    """The binds that make ``workspace``'s control paths read-only for one command; ``release``
    it when the command is over."""
    settle()  # a placeholder still being removed would be taken for the project's own directory
    ws = os.path.realpath(workspace)
    fs = _Lookup()
    with os.scandir(ws) as entries:
        venvs = [e.name for e in entries if e.is_dir() and os.path.isfile(os.path.join(e.path, "pyvenv.cfg"))]
    mounts: dict[str, Mount] = {}
    watched: dict[str, str | None] = {}
    for control in CONTROL_PATHS:
        for head in venvs if control.parts[0] == VENV else control.parts[:1]:
            rest = "/".join(control.parts[1:])
            top = f"{ws.rstrip('/')}/{head}"
            if glob.has_magic(rest):
                paths = [f"{top}/{found}" for found in glob.glob(rest, root_dir=top)]
            else:
                paths = [f"{top}/{rest}" if rest else top]
            for path in paths:
                watched.update(_links(ws, path, fs))
                if control.missing == "watch" and not fs.exists(path):
                    watched[path] = None
                elif control.missing == "placeholder" or fs.exists(path):
                    _walk(ws, fs.realpath(ws, path), control.why, mounts, fs)
    for hooks in _hooks_paths(ws):  # wherever the repository's config says its hooks are
        why = "git runs these hooks on the host (core.hooksPath)"
        _walk(ws, os.path.realpath(os.path.join(ws, hooks)), why, mounts, fs)
    placeholders = tuple(m.path for m in mounts.values() if m.how == "empty" or m.path in _HELD)
    _HELD.update(placeholders)
    ordered = sorted(mounts.values(), key=lambda m: len(m.path.parts))
    return Guard(Path(ws), tuple(ordered), placeholders, tuple((Path(p), link) for p, link in watched.items()))


class _Lookup:
    """``lstat`` of workspace paths, each made once per ``guard`` (most share ``.git``): the
    guard runs before every command, so its system calls are counted."""

    def __init__(self) -> None:
        self._seen: dict[str, os.stat_result | None] = {}

    def lstat(self, path: str) -> os.stat_result | None:
        if path not in self._seen:
            try:
                self._seen[path] = os.lstat(path)
            except OSError:
                self._seen[path] = None
        return self._seen[path]

    def exists(self, path: str) -> bool:  # os.path.lexists
        return self.lstat(path) is not None

    def is_link(self, path: str) -> bool:
        found = self.lstat(path)
        return found is not None and stat.S_ISLNK(found.st_mode)

    def is_dir(self, path: str) -> bool:  # following a symlink, as os.path.isdir
        found = self.lstat(path)
        if found is not None and stat.S_ISLNK(found.st_mode):
            return os.path.isdir(path)
        return found is not None and stat.S_ISDIR(found.st_mode)

    def realpath(self, ws: str, path: str) -> str:
        """``os.path.realpath(path)`` for a path below the resolved ``ws`` made of plain names:
        itself unless a component is a symlink."""
        at = ws.rstrip("/")
        for part in path[len(at) + 1:].split("/"):
            at = f"{at}/{part}"
            if self.is_link(at):
                return os.path.realpath(path)
        return path


def _hooks_paths(ws: str) -> list[str]:
    """The ``core.hooksPath`` values in the workspace's ``.git/config`` (relative to the workspace)."""
    try:
        with open(os.path.join(ws, ".git", "config"), encoding="utf-8", errors="replace") as config:
            text = config.read()
    except OSError:
        return []
    values = [value.strip().strip('"') for value in _HOOKS_PATH.findall(text)]
    return [value for value in values if value and not value.startswith("~")]  # a home is outside


def _links(ws: str, path: str, fs: _Lookup) -> dict[str, str | None]:
    """The symlinks on the way from ``ws`` to ``path``, with their targets."""
    found: dict[str, str | None] = {}
    at = ws.rstrip("/")
    for part in path[len(at) + 1:].split("/"):
        at = f"{at}/{part}"
        if not fs.is_link(at):
            if not fs.is_dir(at):
                break
            continue
        found[at] = os.readlink(at)
        break  # beyond it the path is the target's, bound where it resolves
    return found


def _walk(ws: str, target: str, why: str, mounts: dict[str, Mount], fs: _Lookup) -> None:
    """Pin each directory from ``ws`` down to ``target``, then bind it read-only; a placeholder
    at its first missing component; a file on the way (``.git`` pointing elsewhere) read-only."""
    path = ws.rstrip("/")
    if not target.startswith(f"{path}/"):
        return  # outside the workspace everything is read-only already (or the workspace itself)
    parts = target[len(path) + 1:].split("/")
    for i, part in enumerate(parts):
        path = f"{path}/{part}"
        if not fs.exists(path):
            mounts.setdefault(path, Mount(Path(path), "empty", why))  # the first control path's reason
            return
        if i == len(parts) - 1 or not fs.is_dir(path):
            mounts[path] = Mount(Path(path), "ro", why)
            return
        if path not in mounts:
            mounts[path] = Mount(Path(path), "pin", why)


def release(box: Guard) -> list[str]:
    """After the command: its placeholders removed when still empty and no other command holds
    them (in the background, ``settle`` waits); a watched path put back as it was (absent, or
    the same symlink). Returns the paths put back, for the result."""
    free = []
    for path in box.placeholders:
        _HELD[path] -= 1
        if _HELD[path] <= 0:
            del _HELD[path]
            free.append(path)
    if free:
        _TIDYING.append(_TIDIER.submit(_remove_empty, free))
    undone = []
    for path, link in box.watched:
        now = os.readlink(path) if os.path.islink(path) else "" if os.path.lexists(path) else None
        if now == link:
            continue
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path)
        else:
            path.unlink(missing_ok=True)
        if link is not None:
            os.symlink(link, path)
        undone.append(str(path.relative_to(box.workspace)))
    return undone


def settle() -> None:
    """Waits until the placeholders of every released command are removed (or kept: not empty)."""
    while _TIDYING:
        _TIDYING.pop(0).result()


def _remove_empty(paths: list[Path]) -> None:
    """Removes each of ``paths`` that is still an empty directory, the deepest first (one may
    hold another's mount point: ``.git/hooks`` made in a ``.git`` another command holds), in
    the background: ``rmdir`` can wait on the disk (ext4 mounted with ``discard`` frees a
    directory's block synchronously, ~1 ms each on a VM's disk)."""
    for path in sorted(paths, key=lambda p: -len(p.parts)):
        with contextlib.suppress(OSError):
            os.rmdir(path)  # fails, as it should, once something is in it


def readme_lines() -> list[str]:
    """The list docs/safety.md shows (``python -m benchmarks.docs`` writes it; a test checks it)."""
    return [f"- `{c.path}`: {c.why}" for c in CONTROL_PATHS]

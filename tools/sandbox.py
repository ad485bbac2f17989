"""The sandbox shell commands run in: bubblewrap (``bwrap``) on Linux.

A sandboxed command sees the host's filesystem read-only, with three exceptions:
the task's workspace is writable, ``/tmp`` is a private, empty, writable temp dir, and
the worker's own files (its data directory, secrets file, context store) are hidden
behind empty directories or ``/dev/null``. It has no network (its own empty loopback)
unless the task was started with ``--network``; no capabilities, even as root (so it
cannot remount anything writable); its own PID namespace (it cannot see or signal the
worker, nor read the worker's environment in ``/proc``); and it dies with its worker
(``--die-with-parent``): a command never outlives the process that ran it, and every
process it started ends when it ends.

``AGENT_SANDBOX`` chooses what happens:

| value | sandbox works | bubblewrap missing or refused |
|---|---|---|
| ``auto`` (default) | commands run sandboxed | plainly read-only commands run, others are refused with a line saying how to install it |
| ``required`` | commands run sandboxed | the worker does not start |
| ``off`` | commands run unsandboxed | commands run unsandboxed |

The worker probes once at start (``status()``) and says which of these holds.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

MODE_ENV = "AGENT_SANDBOX"
BWRAP_ENV = "AGENT_BWRAP"  # path of the bwrap binary, if not on PATH
MODES = ("auto", "required", "off")
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap)"
PROBE_TIMEOUT_S = 10.0


class SandboxUnavailable(RuntimeError):
    """``AGENT_SANDBOX=required`` and bubblewrap cannot run here."""


@dataclass(frozen=True)
class SandboxStatus:
    mode: str  # auto | required | off
    bwrap: str | None  # the working bwrap binary, or None
    problem: str = ""  # why there is no sandbox, when there is none

    @property
    def active(self) -> bool:
        return self.mode != "off" and self.bwrap is not None

    @property
    def refuses_unsafe(self) -> bool:
        """No sandbox, and nobody said to run without one: only read-only commands run."""
        return not self.active and self.mode != "off"

    def notice(self) -> str:
        """One line for the worker's start: what commands run in."""
        if self.active:
            return f"sandbox: shell commands run in bubblewrap ({self.bwrap})"
        if self.mode == "off":
            return "sandbox: off (AGENT_SANDBOX=off): shell commands run unsandboxed as the worker's user"
        return (
            f"sandbox: unavailable ({self.problem}): only plainly read-only shell commands will run; "
            f"{INSTALL_HINT}, or set AGENT_SANDBOX=off to run every command unsandboxed"
        )

    def refusal(self) -> str:
        return (
            f"[refused] This command was not run: there is no sandbox on this worker ({self.problem}), "
            "so only plainly read-only commands run. Tell the user: the worker's operator can "
            f"{INSTALL_HINT}, or set AGENT_SANDBOX=off to allow unsandboxed commands."
        )


_STATUS: SandboxStatus | None = None


def status(env: dict[str, str] | None = None, *, refresh: bool = False) -> SandboxStatus:
    """The sandbox this process runs commands in, probed once (``bwrap`` runs ``true``)."""
    global _STATUS
    if _STATUS is None or refresh or env is not None:
        found = probe(dict(os.environ) if env is None else env)
        if env is not None:
            return found
        _STATUS = found
    return _STATUS


def probe(env: dict[str, str]) -> SandboxStatus:
    mode = env.get(MODE_ENV, "auto").strip().lower() or "auto"
    if mode not in MODES:
        raise ValueError(f"{MODE_ENV}={mode!r}: expected one of {', '.join(MODES)}")
    if mode == "off":
        return SandboxStatus(mode, None)
    binary = env.get(BWRAP_ENV) or shutil.which("bwrap", path=env.get("PATH"))
    if not binary:
        found = SandboxStatus(mode, None, "bubblewrap (bwrap) is not installed")
    else:
        found = _try(mode, binary)
    if mode == "required" and not found.active:
        raise SandboxUnavailable(f"{MODE_ENV}=required, but {found.problem}: {INSTALL_HINT}")
    return found


def _try(mode: str, binary: str) -> SandboxStatus:
    argv = command_line(binary, ["/bin/true"], workspace=Path("/tmp"), network=False, hidden=())
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return SandboxStatus(mode, None, f"{binary} could not run: {exc}")
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return SandboxStatus(mode, None, f"bubblewrap is refused here: {why[-1] if why else done.returncode}")
    return SandboxStatus(mode, binary)


def command_line(
    bwrap: str, argv: list[str], *, workspace: Path, network: bool, hidden: Iterable[Path]
) -> list[str]:
    """The bwrap command line that runs ``argv`` in ``workspace``, sandboxed."""
    ws = Path(os.path.realpath(workspace))
    args = [
        bwrap,
        "--ro-bind", "/", "/",
        "--dev", "/dev",
        "--proc", "/proc",
        "--tmpfs", "/tmp",
        "--tmpfs", "/dev/shm",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
    ]
    if not network:
        args.append("--unshare-net")
    # Mounts apply in order, so a parent comes before what is inside it: the workspace may
    # sit in /tmp or in a hidden directory, or a hidden file in the workspace.
    mounts: list[tuple[Path, list[str]]] = [(ws, ["--bind", str(ws), str(ws)])]
    for path in hidden:
        real = Path(os.path.realpath(path))
        if real == ws or not real.exists():
            continue  # never hide the workspace itself
        how = "--tmpfs" if real.is_dir() else "--ro-bind"
        mounts.append((real, [how, str(real)] if how == "--tmpfs" else [how, "/dev/null", str(real)]))
    for _, mount in sorted(mounts, key=lambda m: len(m[0].parts)):
        args += mount
    args += ["--chdir", str(ws), "--", *argv]
    return args

"""The sandbox shell commands run in: bubblewrap (``bwrap``) on Linux.

A sandboxed command sees the host's filesystem read-only, with three exceptions: the task's
workspace is writable, ``/tmp`` is a private, empty, writable temp dir (and ``HOME``), and
what it must not read is hidden behind empty directories or ``/dev/null``: the worker's own
files (data directory, secrets file, context store, MCP config), ``/root`` and ``/home``,
``/run`` and the host's root-owned secrets (``HOST_PRIVATE``). It has no network (its own
empty loopback); a task started with ``--network`` reaches the outside only through the
worker's proxy, whose socket (``egress``) is bound in (``tools/shell_network.py``); no capabilities; its own
PID namespace (it cannot see or signal the worker, nor read its environment in ``/proc``);
per-command limits (``tools/sandbox_limits.py``); and it dies with its worker
(``--die-with-parent``), every process it started with it.

Why it holds as root, the default in containers (each measured here, bwrap 0.8, Linux 6.x):

- Root without capabilities still reads and writes what root owns. Writes are stopped by the
  read-only mounts; reads of root-owned secrets only by hiding them, so they are named.
  ``/run`` goes whole: a read-only mount does not stop ``connect()`` on a Unix socket
  (Docker, D-Bus, PostgreSQL).
- The sandbox's ``/proc`` is remounted read-only as a whole, so ``/proc/sys`` and the other
  entries that write to the host's kernel (``PROC_READ_ONLY``) are: bwrap covers some of
  them itself but skips ``/proc/sys``, whose directory is not writable although its files
  (``core_pattern``, ``drop_caches``) are. A user namespace would not help: bwrap maps the
  command to the caller's uid, so on the host it stays uid 0 either way, and the kernel
  checks that uid for ``/proc/sys``. One remount, not a bind per entry: each bind costs
  bwrap a read of the whole mount table (~0.2 ms). A command's own ``/proc/self`` files
  (``oom_score_adj``, ``comm``) are read-only with it; writing through ``/proc/self/fd``
  (``/dev/stdout``) still works, as it reaches the file, not ``/proc``.
- Binds are ``nosuid`` inside, but a setuid file made in the workspace sits on the host's
  disk: a seccomp filter (``tools/sandbox_seccomp.py``) has the kernel refuse every call
  that would set the bit, so none is ever made; ``tools/sandbox_setuid.py`` still takes
  bits off after every command, the only line where the filter cannot load (the notice says so).

``AGENT_SANDBOX`` chooses what happens:

| value | sandbox works | bubblewrap missing or refused |
|---|---|---|
| ``auto`` (default) | commands run sandboxed | plainly read-only commands run, others are refused with a line saying how to install it |
| ``required`` | commands run sandboxed | the worker does not start |
| ``off`` | commands run unsandboxed | commands run unsandboxed |

``AGENT_SANDBOX_READABLE`` (comma-separated paths) shows paths inside hidden directories
again, read-only: a toolchain installed in a home directory (``/root/.pyenv``). The shell
gets ``Settings.sandbox`` in its ``ToolContext``; ``status(settings)`` probes once per
process (worker.py at start), saying which of these holds, with the limits.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from pathlib import Path

from core.settings import SandboxSettings, ShellLimits
from tools.control_paths import Mount
from tools.sandbox_limits import describe, find_pids_cgroup
from tools.sandbox_seccomp import program_fd

MODE_ENV = "AGENT_SANDBOX"
INSTALL_HINT = "install bubblewrap (Debian/Ubuntu: sudo apt-get install bubblewrap)"
PROBE_TIMEOUT_S = 10.0
# Entries of /proc that write to the host's kernel: read-only with the rest of the sandbox's /proc.
PROC_READ_ONLY = ("sys", "sysrq-trigger", "irq", "bus", "fs", "sysvipc", "acpi", "driver", "tty", "scsi", "mtrr")
# What no command reads: home directories, sockets, and secrets that root owns.
HOST_PRIVATE = (
    "/root", "/home", "/run",
    "/etc/shadow", "/etc/shadow-", "/etc/gshadow", "/etc/gshadow-", "/etc/sudoers", "/etc/sudoers.d",
    "/etc/ssl/private", "/etc/ssh/ssh_host_*key", "/etc/wireguard", "/etc/NetworkManager/system-connections",
    "/etc/letsencrypt", "/etc/kubernetes", "/var/lib/kubelet", "/var/lib/docker",
)


class SandboxUnavailable(RuntimeError):
    """``AGENT_SANDBOX=required`` and bubblewrap cannot run here."""


@dataclass(frozen=True)
class SandboxStatus:
    mode: str  # auto | required | off
    bwrap: str | None  # the working bwrap binary, or None
    problem: str = ""  # why there is no sandbox, when there is none
    limits: ShellLimits = field(default_factory=ShellLimits)
    pids_cgroup: Path | None = None  # where each command gets a pids cgroup, if anywhere
    readable: tuple[Path, ...] = ()  # shown read-only inside hidden directories
    unfiltered: str = ""  # why commands run without the seccomp filter, when they do

    @property
    def filtered(self) -> bool:
        """Commands run under the seccomp filter that refuses setuid/setgid bits."""
        return self.active and not self.unfiltered

    @property
    def active(self) -> bool:
        return self.mode != "off" and self.bwrap is not None

    @property
    def refuses_unsafe(self) -> bool:
        """No sandbox, and nobody said to run without one: only read-only commands run."""
        return not self.active and self.mode != "off"

    @property
    def procs_limited(self) -> bool:
        return self.pids_cgroup is not None or os.getuid() != 0

    def notice(self) -> str:
        """One line for the worker's start: what commands run in, under which limits."""
        limits = f"; limits: {describe(self.limits, self.procs_limited)}"
        if self.active and self.unfiltered:
            return (
                f"sandbox: shell commands run in bubblewrap ({self.bwrap}) without its seccomp filter "
                f"({self.unfiltered}): setuid/setgid bits are taken off only after each command{limits}"
            )
        if self.active:
            return f"sandbox: shell commands run in bubblewrap ({self.bwrap}) with its seccomp filter{limits}"
        if self.mode == "off":
            return f"sandbox: off (AGENT_SANDBOX=off): shell commands run unsandboxed as the worker's user{limits}"
        return (
            f"sandbox: unavailable ({self.problem}): only plainly read-only shell commands will run; "
            f"{INSTALL_HINT}, or set AGENT_SANDBOX=off to run every command unsandboxed{limits}"
        )

    def refusal(self) -> str:
        return (
            f"[refused] This command was not run: there is no sandbox on this worker ({self.problem}), "
            "so only plainly read-only commands run. Tell the user: the worker's operator can "
            f"{INSTALL_HINT}, or set AGENT_SANDBOX=off to allow unsandboxed commands."
        )


_PROBED: dict[SandboxSettings, SandboxStatus] = {}  # each settings' probe, made once per process


def status(settings: SandboxSettings, *, refresh: bool = False) -> SandboxStatus:
    """The sandbox commands run in with ``settings``, probed once (``bwrap`` runs ``true``)."""
    if refresh or settings not in _PROBED:
        _PROBED[settings] = probe(settings)
    return _PROBED[settings]


def probe(settings: SandboxSettings, *, path: str | None = None) -> SandboxStatus:
    """What ``settings`` give here; ``path`` is where to look for ``bwrap`` (None: ``PATH``)."""
    mode = settings.mode
    base = SandboxStatus(mode, None, limits=settings.limits, pids_cgroup=find_pids_cgroup(), readable=settings.readable)
    if mode == "off":
        return base
    binary = settings.bwrap or shutil.which("bwrap", path=path)
    if not binary:
        found = replace(base, problem="bubblewrap (bwrap) is not installed")
    else:
        found = _try(base, binary)
    if mode == "required" and not found.active:
        raise SandboxUnavailable(f"{MODE_ENV}=required, but {found.problem}: {INSTALL_HINT}")
    return found


def _try(base: SandboxStatus, binary: str) -> SandboxStatus:
    """``bwrap`` runs ``true`` with the seccomp filter; if that fails, once more without it."""
    with program_fd() as seccomp:
        unfiltered = _fails(binary, seccomp)
    if not unfiltered:
        return replace(base, bwrap=binary)
    if problem := _fails(binary, None):
        return replace(base, problem=problem)
    return replace(base, bwrap=binary, unfiltered=unfiltered)


def _fails(binary: str, seccomp: int | None) -> str:
    """Why ``bwrap`` cannot run ``true`` here, or ``""``."""
    argv = command_line(binary, ["/bin/true"], workspace=Path("/tmp"), hidden=(), seccomp=seccomp)
    fds = () if seccomp is None else (seccomp,)
    try:
        done = subprocess.run(argv, capture_output=True, timeout=PROBE_TIMEOUT_S, check=False, pass_fds=fds)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"{binary} could not run: {exc}"
    if done.returncode != 0:
        why = done.stderr.decode("utf-8", "replace").strip().splitlines()
        return f"bubblewrap is refused here: {why[-1] if why else done.returncode}"
    return ""


def command_line(
    bwrap: str,
    argv: list[str],
    *,
    workspace: Path,
    hidden: Iterable[Path],
    readable: Iterable[Path] = (),
    egress: tuple[Path, str] | None = None,
    control: Iterable[Mount] = (),
    seccomp: int | None = None,
    netns_entered: bool = False,
) -> list[str]:
    """The bwrap command line that runs ``argv`` in ``workspace``, sandboxed: ``hidden`` (the
    worker's files) are hidden with ``HOST_PRIVATE``, ``readable`` shown again inside them;
    ``egress`` (the proxy's socket, where the command finds it) is its only way out;
    ``control`` (``tools/control_paths.py``'s guard) read-only over the workspace's bind;
    ``seccomp`` is a descriptor of ``sandbox_seccomp.program_fd()``, passed to ``bwrap``;
    ``netns_entered``: bwrap starts in a fresh network namespace already (``tools/sandbox_netns.py``)."""
    ws = os.path.realpath(workspace)
    args = [bwrap, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--remount-ro", "/proc"]
    args += [
        "--tmpfs", "/tmp",
        "--tmpfs", "/dev/shm",
        "--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try",
        "--die-with-parent",
        "--new-session",
        "--cap-drop", "ALL",
    ]
    if not netns_entered:  # with --network too: the outside is reached only through ``egress``
        args.append("--unshare-net")
    if seccomp is not None:
        args += ["--seccomp", str(seccomp)]
    # Mounts apply in order, so a parent comes before what is inside it: the workspace may sit
    # in a hidden directory (bound after it), or a hidden file in the workspace. A hidden
    # directory is an empty tmpfs, made read-only last. Paths are plain strings here, each
    # resolved and stat'ed once: this runs before every command.
    mounts: dict[str, tuple[int, list[str]]] = {}
    private = [p for pattern in HOST_PRIVATE for p in (glob.glob(pattern) if "*" in pattern else [pattern])]
    for path in [*private, *map(str, hidden)]:
        try:
            is_dir = stat.S_ISDIR(os.stat(path).st_mode)  # most of HOST_PRIVATE is not there
        except OSError:
            continue  # nothing there to hide
        real = os.path.realpath(path)
        if real == ws or real in mounts:
            continue  # never hide the workspace itself
        mounts[real] = (0, ["--tmpfs", real] if is_dir else ["--ro-bind", "/dev/null", real])
    hides = list(mounts)
    for path in readable:
        real = os.path.realpath(path)
        if real != ws and any(_inside(real, h) for h in hides):
            mounts[real] = (1, ["--ro-bind-try", real, real])
    mounts[ws] = (2, ["--bind", ws, ws])
    for mount in control:  # after the workspace (deeper), each parent before what it holds
        at = str(mount.path)
        binds = {"pin": ["--bind", at, at], "ro": ["--ro-bind", at, at], "empty": ["--tmpfs", at, "--remount-ro", at]}
        mounts.setdefault(at, (3, binds[mount.how]))
    for _path, (_order, mount) in sorted(mounts.items(), key=lambda m: (_depth(m[0]), m[1][0])):
        args += mount
    for path in hides:  # read-only once what sits inside is mounted: a write fails as elsewhere
        if mounts[path][1][0] == "--tmpfs":
            args += ["--remount-ro", path]
    if egress is not None:  # into the sandbox's own /tmp, made above
        args += ["--ro-bind", str(egress[0]), egress[1]]
    args += ["--chdir", ws, "--", *argv]
    return args


def _inside(path: str, parent: str) -> bool:
    """``path`` is ``parent`` or below it (both resolved)."""
    return path == parent or path.startswith(parent.rstrip("/") + "/")


def _depth(path: str) -> int:
    """How many components ``path`` (resolved, absolute) has: a parent's is smaller."""
    return 0 if path == "/" else path.count("/")

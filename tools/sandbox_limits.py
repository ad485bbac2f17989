"""Per-command resource limits: processes, memory, CPU time and file size (``ShellLimits``).

Why these mechanisms (measured on Linux 6.x, as root, the default in containers):

- Memory, CPU time and file size are rlimits, set in the child before it runs bubblewrap (or
  bash), so every process of the command inherits them. Memory is ``RLIMIT_DATA`` (writable
  private memory), not ``RLIMIT_AS``: runtimes reserve address space they never touch (200
  threads' stacks, V8, the JVM), and ``RLIMIT_AS`` refuses those. Core dumps are off.
- Processes: ``RLIMIT_NPROC`` never binds a process whose real uid is 0, not even inside a
  user namespace (the kernel exempts the root user outright), and for other users it counts
  every process of the uid on the host. So each command gets a pids cgroup of its own
  (``pids.max``) where this process can make one (cgroup v1's pids hierarchy, or v2 with
  pids delegated); elsewhere a worker that is not root sets ``RLIMIT_NPROC`` to what its uid
  already runs plus the limit; a root worker with no writable cgroup has no process limit,
  and its start line says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import resource
import time
import uuid
from pathlib import Path

from core.settings import ShellLimits

MIB = 1024 * 1024
CGROUP_PREFIX = "durable-agent-"
STALE_CGROUP_S = 60.0  # an empty command cgroup older than this was left by a worker that died
# The cgroup empties as the sandbox's last processes are reaped, most often within a millisecond
# or two of bwrap's exit: polled from 0.5 ms, doubling to 10 ms, for up to half a second.
RELEASE_POLL_S, RELEASE_POLL_MAX_S, RELEASE_WAIT_S = 0.0005, 0.01, 0.5


def describe(limits: ShellLimits, procs_enforced: bool) -> str:
    """The limits in a few words, for the worker's start line."""
    procs = f"{limits.procs} processes" if procs_enforced else "no process limit (root without a pids cgroup)"
    return (
        f"{procs}, {limits.memory_mb} MiB memory, {limits.cpu_s} s CPU per process, "
        f"files up to {limits.file_mb} MiB"
    )


def find_pids_cgroup() -> Path | None:
    """A cgroup directory in which this process can make pids cgroups, or None."""
    try:
        found = candidates(Path("/proc/self/mountinfo").read_text(), Path("/proc/self/cgroup").read_text())
    except OSError:
        return None
    for base in found:
        if _usable(base):
            _sweep(base)
            return base
    return None


def candidates(mountinfo: str, own_cgroup: str) -> list[Path]:
    """Where this process's pids cgroup is mounted (from ``/proc/self/mountinfo`` and
    ``/proc/self/cgroup``): cgroup v1's pids hierarchy first, then v2."""
    own = dict(_own_cgroups(own_cgroup))
    found: list[tuple[int, Path]] = []
    for line in mountinfo.splitlines():
        parts = line.split()
        tail = parts[parts.index("-") + 1:] if "-" in parts else []
        if len(parts) < 5 or len(tail) < 3:
            continue
        if tail[0] == "cgroup" and "pids" in tail[2].split(","):
            version, path = 1, own.get("pids")
        elif tail[0] == "cgroup2":
            version, path = 2, own.get("")
        else:
            continue
        if path is None:
            continue
        root = parts[3]
        if root != "/" and (path + "/").startswith(root + "/"):  # mounted from below its root
            path = path[len(root):]
        found.append((version, Path(parts[4]) / path.lstrip("/")))
    return [where for _, where in sorted(found)]


def _own_cgroups(text: str) -> list[tuple[str, str]]:
    """(controller, path) of this process; the cgroup v2 line is under ""."""
    found: list[tuple[str, str]] = []
    for line in text.splitlines():
        if line.count(":") < 2:
            continue
        _, controllers, path = line.split(":", 2)
        for controller in controllers.split(",") if controllers else [""]:
            found.append((controller, path))
    return found


def _usable(base: Path) -> bool:
    probe = base / f"{CGROUP_PREFIX}probe-{os.getpid()}"
    try:
        probe.mkdir()
    except OSError:
        return False
    try:
        (probe / "pids.max").write_text("1")
        return True
    except OSError:
        return False
    finally:
        with contextlib.suppress(OSError):
            probe.rmdir()


def _sweep(base: Path) -> None:
    """Removes the empty command cgroups a worker that died left behind."""
    now = time.time()
    with contextlib.suppress(OSError), os.scandir(base) as entries:
        for entry in entries:
            if entry.name.startswith(CGROUP_PREFIX) and entry.is_dir(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    if now - entry.stat(follow_symlinks=False).st_mtime > STALE_CGROUP_S:
                        os.rmdir(entry.path)  # refused while a process is in it


def uid_tasks(uid: int) -> int:
    """Processes and threads whose real uid is ``uid``: what ``RLIMIT_NPROC`` counts."""
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", "rb") as f:
                status = f.read()
        except OSError:
            continue
        lines = {k: v for k, _, v in (ln.partition(b":") for ln in status.splitlines())}
        if int(lines.get(b"Uid", b"-1 ").split()[0]) == uid:
            count += int(lines.get(b"Threads", b"1"))
    return count


_LEFT: set[Path] = set()  # command cgroups still in use at release: removed once empty


def _remove_left() -> None:
    for path in list(_LEFT):
        try:
            path.rmdir()
        except FileNotFoundError:
            pass
        except OSError:
            continue
        _LEFT.discard(path)


class Confinement:
    """One command's limits: made before it starts, entered in its child between fork and
    exec (``enter``), and released once it has ended (``release``)."""

    def __init__(self, limits: ShellLimits, pids_cgroup: Path | None) -> None:
        self.cgroup: Path | None = None
        self._procs_fd = -1
        wanted = [
            (resource.RLIMIT_DATA, limits.memory_mb * MIB),
            (resource.RLIMIT_CPU, limits.cpu_s),
            (resource.RLIMIT_FSIZE, limits.file_mb * MIB),
            (resource.RLIMIT_CORE, 0),
        ]
        if pids_cgroup is not None:
            _remove_left()
            self.cgroup = pids_cgroup / f"{CGROUP_PREFIX}{uuid.uuid4().hex[:12]}"
            self.cgroup.mkdir()
            try:
                (self.cgroup / "pids.max").write_text(str(limits.procs))
                self._procs_fd = os.open(self.cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
            except OSError:
                self.cgroup.rmdir()
                raise
        elif os.getuid() != 0:
            wanted.append((resource.RLIMIT_NPROC, uid_tasks(os.getuid()) + limits.procs))
        # Never above the worker's own hard limits, which only root may raise.
        self.rlimits = [(which, _within(which, value)) for which, value in wanted]

    def enter(self) -> None:
        """In the child, before exec: joins the cgroup and sets the rlimits (system calls only)."""
        if self._procs_fd >= 0:
            os.write(self._procs_fd, b"0")
        for which, value in self.rlimits:
            resource.setrlimit(which, (value, value))

    async def release(self, *, wait: bool = True) -> None:
        """Removes the cgroup once empty; ``wait`` for the last processes to be reaped (a
        sandbox's all end with it; an unsandboxed command's background ones may not)."""
        if self._procs_fd >= 0:
            os.close(self._procs_fd)
            self._procs_fd = -1
        delay, waited = RELEASE_POLL_S, 0.0
        while self.cgroup is not None:
            try:
                self.cgroup.rmdir()
                self.cgroup = None
            except FileNotFoundError:
                self.cgroup = None
            except OSError:  # still in use
                if not wait or waited >= RELEASE_WAIT_S:
                    break
                await asyncio.sleep(delay)
                waited += delay
                delay = min(2 * delay, RELEASE_POLL_MAX_S)
        if self.cgroup is not None:  # an unsandboxed command's background processes live on
            _LEFT.add(self.cgroup)
            self.cgroup = None


def _within(which: int, value: int) -> int:
    _, hard = resource.getrlimit(which)
    return value if hard == resource.RLIM_INFINITY else min(value, hard)

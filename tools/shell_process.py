"""Running a shell command's processes: spawn, read the output, heartbeat, time out, kill.

Split from ``tools/shell.py`` (what runs, and how the result reads) so each stays one concept:
here a pipeline of argvs runs with every output on one pipe of our own (so we can close the
read end even if a background child keeps it open), each process in a session and process
group of its own (a pipeline's first reader may be gone before the next starts, so they
cannot share one), the last one's exit code the result. A timeout or a cancelled activity
kills every group with every child in it; an unsandboxed command also dies with its worker
(``PR_SET_PDEATHSIG``), as bubblewrap's ``--die-with-parent`` makes a sandboxed one.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
from collections.abc import Callable, Mapping
from pathlib import Path

from tools.base import ToolContext
from tools.shell_output import _Capture

PR_SET_PDEATHSIG = 1
READ_CHUNK = 64 * 1024
HEARTBEAT_INTERVAL_S = 2.0
# After bash exits, how long to wait for background children to close the pipe.
DRAIN_GRACE_S = 1.0
def _kill_groups(procs: list[asyncio.subprocess.Process]) -> None:
    """Kills each process's group (each leads its own) with every child in it."""
    for proc in procs:
        if proc.returncode is not None and len(procs) > 1:
            continue  # reaped: its group id may be reused (a lone command's children may live on)
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


async def _drain(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while chunk := await stream.read(READ_CHUNK):
        capture.feed(chunk)


async def _wait(
    procs: list[asyncio.subprocess.Process], timeout_s: int, ctx: ToolContext, capture: _Capture | None = None
) -> int | None:
    """The last process's exit code, heartbeating meanwhile; None if the groups were killed at
    the timeout."""
    proc = procs[-1]
    loop = asyncio.get_running_loop()
    started = loop.time()
    exited = asyncio.ensure_future(proc.wait())
    try:
        while True:
            remaining = started + timeout_s - loop.time()
            if remaining <= 0:
                _kill_groups(procs)
                await exited
                return None
            await asyncio.wait({exited}, timeout=min(HEARTBEAT_INTERVAL_S, remaining))
            if exited.done():
                return exited.result()
            if capture is not None:
                ctx.progress(ctx.redact(capture.tail_text()))
            ctx.heartbeat(f"shell running {int(loop.time() - started)}s")
    finally:
        exited.cancel()


async def _supervise(
    procs: list[asyncio.subprocess.Process], read_fd: int, timeout_s: int, ctx: ToolContext
) -> tuple[int | None, str, bool]:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    capture = _Capture()
    reader = asyncio.create_task(_drain(stream, capture))
    try:
        code = await _wait(procs, timeout_s, ctx, capture)
        # Background children may still hold the pipe: read what is there, then stop.
        await asyncio.wait({reader}, timeout=DRAIN_GRACE_S)
    finally:
        reader.cancel()
        transport.close()  # stops reading at once, but closes the pipe only later...
        pipe.close()  # ...so close it now: a background writer gets SIGPIPE instead of blocking
    return code, *capture.render(ctx.redact)


def _die_with_worker() -> None:
    """In the child before exec (unsandboxed): SIGKILL when the worker dies, as bubblewrap's
    --die-with-parent does for sandboxed commands, so a command never outlives its worker."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the process group kill still applies
        pass


async def run_pipeline(
    pipeline: list[list[str]], ctx: ToolContext, *, cwd: Path, env: Mapping[str, str], timeout_s: int,
    enter: Callable[[], None], sandboxed: bool, pass_fds: tuple[int, ...] = (),
) -> tuple[int | None, str, bool]:
    """Runs the commands of ``pipeline`` (one, unless a read runs without a shell), each one's
    output piped into the next; ``enter`` runs in each child before exec (its limits). Returns
    (exit code or None at the timeout, output, whether it was cut)."""
    def in_child() -> None:
        enter()
        if not sandboxed:
            _die_with_worker()

    read_fd, write_fd = os.pipe()
    procs: list[asyncio.subprocess.Process] = []
    stdin: int = asyncio.subprocess.DEVNULL
    try:
        for i, argv in enumerate(pipeline):
            last = i == len(pipeline) - 1
            next_in, pipe_out = (-1, write_fd) if last else os.pipe()
            try:
                procs.append(await asyncio.create_subprocess_exec(
                    *argv, cwd=cwd, env=dict(env), stdin=stdin, stdout=pipe_out, stderr=write_fd,
                    preexec_fn=in_child, start_new_session=True, pass_fds=pass_fds,
                ))
            except BaseException:
                if not last:
                    os.close(next_in)
                raise
            finally:  # the children hold their ends now
                for fd in (stdin, -1 if last else pipe_out):
                    if fd >= 0:
                        os.close(fd)
            stdin = next_in
    except BaseException:
        os.close(read_fd)
        _kill_groups(procs)
        raise
    finally:
        os.close(write_fd)
    try:
        return await _supervise(procs, read_fd, timeout_s, ctx)
    except BaseException:  # cancelled (or a heartbeat failed): take every group down
        _kill_groups(procs)
        raise

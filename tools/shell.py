"""The ``shell`` tool: run one bash command in the workspace.

The command runs as ``/bin/bash -c`` in its own process group, so a timeout or a cancelled
activity kills it together with every child it started. Output (stdout and stderr merged) is
read as it comes and at most ``HEAD_BYTES`` + ``TAIL_BYTES`` of it is kept, so a flood cannot
exhaust memory. What the model sees is capped at ``OUTPUT_CAP_CHARS`` characters: longer
output keeps its first and last half, with a ``[... N characters truncated ...]`` line between
(the capture is ``tools/shell_output.py``).

The command's environment is built by allow-list (``core.settings.allowed_env``, taken
from the worker's when worker.py builds ``Settings.shell``): ``PATH``, ``HOME``, ``LANG``,
``LANGUAGE``, ``LC_*``, ``TERM``, ``TZ``, and the names in ``AGENT_SHELL_ENV_ALLOW``, never
anything else of the worker's, so a command (or a prompt injection driving one) cannot
read ``DATABASE_URL`` or an API key with ``env``.

Commands run in the sandbox of ``tools/sandbox.py`` (bubblewrap): read-only filesystem but
the workspace and a private ``/tmp`` (also ``HOME``), home directories and the worker's files
hidden, no network unless the task allows it, and they die with the worker. Each runs under
limits (``tools/sandbox_limits.py``), sandboxed or not, which the worker's operator raises
with ``AGENT_SHELL_MAX_PROCS`` (processes and threads of the whole command, default 256),
``AGENT_SHELL_MAX_MEMORY_MB`` (per process, default 2048), ``AGENT_SHELL_MAX_CPU_S`` (per
process, default 1800) and ``AGENT_SHELL_MAX_FILE_MB`` (largest file written, default 4096).
A sandboxed command cannot set a setuid/setgid bit (the seccomp filter of
``tools/sandbox_seccomp.py``); as a second line, for unsandboxed commands too, bits made in
the workspace are taken off after each command and the result says which files. Secrets
are redacted from the output before it is cut, so a secret straddling the cut does not leak
in part.

``classify_command`` (rules in ``tools/shell_policy/``, on a real bash parser) decides which
commands wait for approval.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import time
from contextlib import nullcontext

from core.settings import ShellSettings
from tools import sandbox, shell_policy
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.sandbox_limits import Confinement
from tools.sandbox_seccomp import program_fd
from tools.sandbox_setuid import strip_setuid
from tools.shell_output import HEAD_BYTES as HEAD_BYTES  # the capture's sizes, importable here too
from tools.shell_output import OUTPUT_CAP_CHARS, _Capture
from tools.shell_output import TAIL_BYTES as TAIL_BYTES

PR_SET_PDEATHSIG = 1
READ_CHUNK = 64 * 1024
HEARTBEAT_INTERVAL_S = 2.0
# After bash exits, how long to wait for background children to close the pipe.
DRAIN_GRACE_S = 1.0
# File times come from a coarse clock, a little behind time.time(): setuid files changed since
# the command's start, less this, lose the bits.
CLOCK_SLACK_S = 1.0

DESCRIPTION = f"""\
Run a bash command in the workspace (the working directory) and return its output.
- stdout and stderr are merged; stdin is closed, so never run interactive commands.
- The command is killed with all its child processes after timeout_s seconds.
- Output over {OUTPUT_CAP_CHARS} characters keeps only its start and end;
  filter long output (grep, head, tail).
- A nonzero exit code is reported, not an error: read it.
- Commands run in a sandbox: only the workspace and /tmp (private, empty; also HOME) are
  writable, the network is off unless the task allows it, and processes started in the
  background end when the command ends (start a server and use it in the same command).
- Processes, memory, CPU time and file size are limited: a command past a limit fails
  ("Resource temporarily unavailable", MemoryError).
"""


class ShellArgs(StrictArgs):
    command: str = Field(description="The bash command line to run.")
    timeout_s: int = Field(120, ge=1, le=3600, description="Seconds before the command is killed.")


def _kill_group(proc: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


async def _drain(stream: asyncio.StreamReader, capture: _Capture) -> None:
    while chunk := await stream.read(READ_CHUNK):
        capture.feed(chunk)


async def _wait(
    proc: asyncio.subprocess.Process, timeout_s: int, ctx: ToolContext, capture: _Capture | None = None
) -> int | None:
    """The exit code, heartbeating meanwhile; None if the group was killed at the timeout."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    exited = asyncio.ensure_future(proc.wait())
    try:
        while True:
            remaining = started + timeout_s - loop.time()
            if remaining <= 0:
                _kill_group(proc)
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
    proc: asyncio.subprocess.Process, read_fd: int, timeout_s: int, ctx: ToolContext
) -> tuple[int | None, str, bool]:
    loop = asyncio.get_running_loop()
    stream = asyncio.StreamReader()
    pipe = os.fdopen(read_fd, "rb", buffering=0)
    transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(stream), pipe)
    capture = _Capture()
    reader = asyncio.create_task(_drain(stream, capture))
    try:
        code = await _wait(proc, timeout_s, ctx, capture)
        # Background children may still hold the pipe: read what is there, then stop.
        await asyncio.wait({reader}, timeout=DRAIN_GRACE_S)
    finally:
        reader.cancel()
        transport.close()  # stops reading at once, but closes the pipe only later...
        pipe.close()  # ...so close it now: a background writer gets SIGPIPE instead of blocking
    return code, *capture.render(ctx.redact)


def command_argv(
    command: str, ctx: ToolContext, box: sandbox.SandboxStatus, seccomp: int | None = None
) -> list[str]:
    """What to execute for ``command``: bash, inside bubblewrap when there is a sandbox (under
    the seccomp filter read from ``seccomp``, if given)."""
    argv = ["/bin/bash", "-c", command]
    if not box.active:
        return argv
    assert box.bwrap is not None
    return sandbox.command_line(
        box.bwrap, argv, workspace=ctx.workspace, network=ctx.network, hidden=ctx.hidden, readable=box.readable,
        seccomp=seccomp,
    )


def _die_with_worker() -> None:
    """In the child before exec (unsandboxed): SIGKILL when the worker dies, as bubblewrap's
    --die-with-parent does for sandboxed commands, so a command never outlives its worker."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):  # not Linux: the process group kill still applies
        pass


def command_env(box: sandbox.SandboxStatus, settings: ShellSettings) -> dict[str, str]:
    found = dict(settings.inherited)
    # Python keys its bytecode cache by the source's mtime in whole seconds and its size: a
    # module edited in the second it was last imported, to the same size (a `-` made a `+`),
    # would run as it was. An agent edits and reruns that fast, so its commands write none.
    found.setdefault("PYTHONDONTWRITEBYTECODE", "1")
    if box.active:  # home directories are hidden in the sandbox: HOME and caches in its private /tmp
        found.update(HOME="/tmp", TMPDIR="/tmp", XDG_CACHE_HOME="/tmp/.cache")
    return found


async def run_shell(args: ShellArgs, ctx: ToolContext) -> ToolOutcome:
    box = sandbox.status(ctx.settings.sandbox)
    if box.refuses_unsafe and not shell_policy.runs_no_code(args.command):
        return ToolOutcome(status="error", content=box.refusal())
    try:
        fence = Confinement(box.limits, box.pids_cgroup)
    except OSError as err:  # the cgroup probed at start cannot be made now: no unlimited run
        return ToolOutcome(status="error", content=f"[not run] the command's limits could not be set up: {err}")
    since = time.time() - CLOCK_SLACK_S
    try:
        code, output, truncated = await _run(args, ctx, box, fence)
    except BaseException:
        strip_setuid(ctx.workspace, since)  # a cancelled command's files too (blocking, but rare)
        raise
    finally:
        await fence.release(wait=box.active)
    stripped = await asyncio.to_thread(strip_setuid, ctx.workspace, since)
    note = f"\n[setuid/setgid bits taken off: {', '.join(stripped)}]" if stripped else ""
    output = output.rstrip("\n")
    if code is None:
        timed_out = f"[timed out after {args.timeout_s} s: the command and its child processes were killed]"
        content = f"{output}\n{timed_out}" if output else timed_out
        return ToolOutcome(status="error", content=content + note, truncated=truncated)
    body = output if output.strip() else "(no output)"
    return ToolOutcome(content=f"{body}\n[exit code: {code}]{note}", exit_code=code, truncated=truncated)


async def _run(
    args: ShellArgs, ctx: ToolContext, box: sandbox.SandboxStatus, fence: Confinement
) -> tuple[int | None, str, bool]:
    def in_child() -> None:
        fence.enter()
        if not box.active:
            _die_with_worker()

    # Our own pipe, so we can close the read end even if a background child keeps it open.
    read_fd, write_fd = os.pipe()
    try:
        with program_fd() if box.filtered else nullcontext() as seccomp:
            proc = await asyncio.create_subprocess_exec(
                *command_argv(args.command, ctx, box, seccomp),
                cwd=ctx.workspace,
                env=command_env(box, ctx.settings.shell),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=write_fd,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=in_child,
                pass_fds=() if seccomp is None else (seccomp,),
            )
    except BaseException:
        os.close(read_fd)
        raise
    finally:
        os.close(write_fd)
    try:
        return await _supervise(proc, read_fd, args.timeout_s, ctx)
    except BaseException:  # cancelled (or a heartbeat failed): take the whole group down
        _kill_group(proc)
        raise


# --- policy ---------------------------------------------------------------


def classify_command(command: str) -> Danger:
    """SAFE (plainly read-only), MODERATE or DANGEROUS: the rules, with their reasons, are in
    ``tools/shell_policy/``."""
    return shell_policy.classify_command(command)[0]


TOOL = ToolDefinition(
    name="shell",
    description=DESCRIPTION,
    args_model=ShellArgs,
    handler=run_shell,
    danger=Danger.MODERATE,
    classify=lambda args: shell_policy.classify_command(args.command),
    classify_in=lambda args, workspace: shell_policy.classify_command(args.command, workspace),
    # A read-only command may run again after a crash; anything else is not rerun blindly.
    idempotent=lambda args: shell_policy.is_read_only(args.command),
    compact_keys=("command",),
    summary_keys=("command",),
    untrusted_source=lambda args: f"shell: {str(args.get('command', ''))[:120]}",
)

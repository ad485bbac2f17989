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
hidden, no network of their own, and they die with the worker. In a task with the network,
they reach the outside through the worker's proxy (``tools/shell_network.py``: the egress
policy and ``AGENT_NETWORK_ALLOW``), and its refusals are appended to the result. The
workspace's control files (``tools/control_paths.py``: ``.git/hooks``, ``.git/config``,
``.agent/``...) are read-only unless the person approved this exact call; a command that fails
writing one gets a line saying so, for the model to ask or explain. Each runs under
limits (``tools/sandbox_limits.py``), sandboxed or not, which the worker's operator raises
with ``AGENT_SHELL_MAX_PROCS`` (processes and threads of the whole command, default 256),
``AGENT_SHELL_MAX_MEMORY_MB`` (per process, default 2048), ``AGENT_SHELL_MAX_CPU_S`` (per
process, default 1800) and ``AGENT_SHELL_MAX_FILE_MB`` (largest file written, default 4096).
After each command, setuid/setgid bits made in the workspace are taken off and the result
says which files. Secrets are redacted from the output before it is cut, so a secret
straddling the cut does not leak in part.

Without bubblewrap (``AGENT_SANDBOX=auto`` on a worker that has none) no shell runs: a plain
read, or a pipeline of them, is started by ``execve`` of system programs (``tools/shell_direct.py``)
and anything else is refused with the line that says how to install it.

``classify_command`` (rules in ``tools/shell_policy/``, on a real bash parser) decides which
commands wait for approval.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import time
from contextlib import AbstractAsyncContextManager, nullcontext

from core.settings import ShellSettings
from tools import control_paths, sandbox, shell_policy
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.sandbox_limits import Confinement
from tools.sandbox_setuid import strip_setuid
from tools.shell_direct import direct_argvs
from tools.shell_network import EGRESS_SOCKET, Route
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
- With the network, connections go through an HTTP proxy (HTTP_PROXY/HTTPS_PROXY are set,
  for every host: curl, pip, git and urllib use it); a refused host is named at the end.
  To reach a server the command itself started, bypass it (curl --noproxy '*').
- Processes, memory, CPU time and file size are limited: a command past a limit fails
  ("Resource temporarily unavailable", MemoryError).
"""


class ShellArgs(StrictArgs):
    command: str = Field(description="The bash command line to run.")
    timeout_s: int = Field(120, ge=1, le=3600, description="Seconds before the command is killed.")


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


def command_argv(
    command: str, ctx: ToolContext, box: sandbox.SandboxStatus, route: Route | None = None,
    guard: control_paths.Guard | None = None,
) -> list[str]:
    """What to execute for ``command``: bash, inside bubblewrap when there is a sandbox, there
    started by the bridge to the proxy when the command has a ``route`` out, and with
    ``guard``'s control paths read-only."""
    argv = ["/bin/bash", "-c", command]
    if not box.active:
        return argv
    assert box.bwrap is not None
    out = (route.socket, EGRESS_SOCKET) if route else None
    return sandbox.command_line(
        box.bwrap, route.wrap(argv) if route else argv, workspace=ctx.workspace, hidden=ctx.hidden,
        readable=(*box.readable, *(route.readable if route else ())), egress=out,
        control=guard.mounts if guard is not None else (),
    )


def _route(ctx: ToolContext, box: sandbox.SandboxStatus) -> AbstractAsyncContextManager[Route | None]:
    """A sandboxed command's way out, when its task has the network (unsandboxed: the host's)."""
    if ctx.network and box.active and ctx.command_egress is not None:
        return ctx.command_egress.route()
    return nullcontext()


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
    direct = None
    if box.refuses_unsafe:  # no sandbox: a plain read runs without a shell, or nothing does
        direct = direct_argvs(args.command)
        if direct is None:
            return ToolOutcome(status="error", content=box.refusal())
    try:
        fence = Confinement(box.limits, box.pids_cgroup)
    except OSError as err:  # the cgroup probed at start cannot be made now: no unlimited run
        return ToolOutcome(status="error", content=f"[not run] the command's limits could not be set up: {err}")
    since = time.time() - CLOCK_SLACK_S
    # Control files are read-only unless the person approved this call (tools/control_paths.py).
    guard = control_paths.guard(ctx.workspace) if box.active and not ctx.approved else None
    undone: list[str] = []
    try:
        async with _route(ctx, box) as route:
            pipeline = direct or [command_argv(args.command, ctx, box, route, guard)]
            code, output, truncated = await _run(pipeline, args, ctx, box, fence)
            refused = ctx.redact(route.summary()) if route else ""
    except BaseException:
        strip_setuid(ctx.workspace, since)  # a cancelled command's files too (blocking, but rare)
        raise
    finally:
        await fence.release(wait=box.active)
        if guard is not None:
            undone = control_paths.release(guard)
    stripped = await asyncio.to_thread(strip_setuid, ctx.workspace, since)
    note = f"\n[setuid/setgid bits taken off: {', '.join(stripped)}]" if stripped else ""
    if undone:
        note += f"\n[put back as they were: {', '.join(undone)} (control files change only in an approved call)]"
    hint = guard.hint(output) if guard is not None else ""
    output = output.rstrip("\n") + (f"\n{hint}" if hint else "")
    if code is None:
        timed_out = f"[timed out after {args.timeout_s} s: the command and its child processes were killed]"
        content = f"{output}\n{timed_out}" if output else timed_out
        return ToolOutcome(status="error", content=content + refused + note, truncated=truncated)
    body = output if output.strip() else "(no output)"
    return ToolOutcome(content=f"{body}\n[exit code: {code}]{refused}{note}", exit_code=code, truncated=truncated)


async def _run(
    pipeline: list[list[str]], args: ShellArgs, ctx: ToolContext, box: sandbox.SandboxStatus, fence: Confinement
) -> tuple[int | None, str, bool]:
    """Runs the commands of ``pipeline`` (one, unless a read runs without a shell), each one's
    output piped into the next, each in a session and process group of its own (a pipeline's
    first reader may be gone before the next starts, so they cannot share one); the last one's
    exit code is the result."""
    def in_child() -> None:
        fence.enter()
        if not box.active:
            _die_with_worker()

    # Our own pipe, so we can close the read end even if a background child keeps it open.
    read_fd, write_fd = os.pipe()
    procs: list[asyncio.subprocess.Process] = []
    stdin: int = asyncio.subprocess.DEVNULL
    try:
        for i, argv in enumerate(pipeline):
            last = i == len(pipeline) - 1
            next_in, pipe_out = (-1, write_fd) if last else os.pipe()
            try:
                procs.append(await asyncio.create_subprocess_exec(
                    *argv, cwd=ctx.workspace, env=command_env(box, ctx.settings.shell), stdin=stdin,
                    stdout=pipe_out, stderr=write_fd, preexec_fn=in_child, start_new_session=True,
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
        return await _supervise(procs, read_fd, args.timeout_s, ctx)
    except BaseException:  # cancelled (or a heartbeat failed): take every group down
        _kill_groups(procs)
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
    # The same reading tells verification (workflows/verify.py) a check from a change.
    read_only=lambda args: shell_policy.is_read_only(args.command),
    compact_keys=("command",),
    summary_keys=("command",),
    untrusted_source=lambda args: f"shell: {str(args.get('command', ''))[:120]}",
)

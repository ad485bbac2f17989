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
A sandboxed command cannot set a setuid/setgid bit (the seccomp filter of
``tools/sandbox_seccomp.py``); as a second line, for unsandboxed commands too, bits made in
the workspace are taken off after each command and the result says which files. Secrets
are redacted from the output before it is cut, so a secret straddling the cut does not leak
in part.

Without bubblewrap (``AGENT_SANDBOX=auto`` on a worker that has none) no shell runs: a plain
read, or a pipeline of them, is started by ``execve`` of system programs (``tools/shell_direct.py``)
and anything else is refused with the line that says how to install it.

``classify_command`` (rules in ``tools/shell_policy/``, on a real bash parser) decides which
commands wait for approval.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager, nullcontext

from core.settings import ShellSettings
from tools import control_paths, sandbox, sandbox_netns, shell_policy
from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome
from tools.sandbox_limits import Confinement
from tools.sandbox_seccomp import program_fd
from tools.sandbox_setuid import strip_setuid
from tools.shell_direct import direct_argvs
from tools.shell_network import EGRESS_SOCKET, Route
from tools.shell_output import OUTPUT_CAP_CHARS
from tools.shell_process import run_pipeline

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


def command_argv(
    command: str, ctx: ToolContext, box: sandbox.SandboxStatus, route: Route | None = None,
    guard: control_paths.Guard | None = None, seccomp: int | None = None, netns: int | None = None,
) -> list[str]:
    """What to execute for ``command``: bash, inside bubblewrap when there is a sandbox, there
    started by the bridge to the proxy when the command has a ``route`` out, with ``guard``'s
    control paths read-only, under the seccomp filter read from ``seccomp`` (if given), in the
    network namespace ``netns`` (if given: the child enters it, ``tools/sandbox_netns.py``)."""
    argv = ["/bin/bash", "-c", command]
    if not box.active:
        return argv
    assert box.bwrap is not None
    out = (route.socket, EGRESS_SOCKET) if route else None
    return sandbox.command_line(
        box.bwrap, route.wrap(argv) if route else argv, workspace=ctx.workspace, hidden=ctx.hidden,
        readable=(*box.readable, *(route.readable if route else ())), egress=out,
        control=guard.mounts if guard is not None else (), seccomp=seccomp, netns_entered=netns is not None,
    )


def _route(ctx: ToolContext, box: sandbox.SandboxStatus) -> AbstractAsyncContextManager[Route | None]:
    """A sandboxed command's way out, when its task has the network (unsandboxed: the host's)."""
    if ctx.network and box.active and ctx.command_egress is not None:
        return ctx.command_egress.route()
    return nullcontext()


def _entering(fence: Confinement, netns: int | None) -> Callable[[], None]:
    """What the command's child does before exec: its limits, and its network namespace."""
    if netns is None:
        return fence.enter

    def enter() -> None:
        sandbox_netns.enter(netns)
        fence.enter()

    return enter


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
    # Control files are read-only unless the person approved this call (tools/control_paths.py).
    guard = control_paths.guard(ctx.workspace) if box.active and not ctx.approved else None
    if guard is None:
        control_paths.settle()  # no empty placeholder of a finished command is left to see
    try:
        fence = Confinement(box.limits, box.pids_cgroup)
    except OSError as err:  # the cgroup probed at start cannot be made now: no unlimited run
        if guard is not None:
            control_paths.release(guard)
        return ToolOutcome(status="error", content=f"[not run] the command's limits could not be set up: {err}")
    since = time.time() - CLOCK_SLACK_S
    undone: list[str] = []
    try:
        with (program_fd() if box.filtered and direct is None else nullcontext() as seccomp,
              sandbox_netns.fresh() if box.active else nullcontext() as netns):
            async with _route(ctx, box) as route:
                pipeline = direct or [command_argv(args.command, ctx, box, route, guard, seccomp, netns)]
                fds = () if seccomp is None else (seccomp,)
                code, output, truncated = await run_pipeline(
                    pipeline, ctx, cwd=ctx.workspace, env=command_env(box, ctx.settings.shell),
                    timeout_s=args.timeout_s, enter=_entering(fence, netns), sandboxed=box.active, pass_fds=fds)
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

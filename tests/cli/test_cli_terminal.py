"""The CLI at a real (pseudo) terminal: `watch` asks inline for an approval and sends it; the
prompt is withdrawn when the call is decided elsewhere, Ctrl-C at it ends `watch` at once,
and its third answer allows commands like the one asked about for the rest of the task."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

from contracts.task import ApprovalDecision, TaskOutcome, TaskState
from fakes.scripted import tool
from tests.cli.test_cli import cli
from tests.cli.vt import Screen
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, wait_for_state
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parents[2]


# Runs the command with the terminal as its controlling terminal (a new session that opens
# it), so Ctrl-C typed there is a SIGINT to it, as in a person's terminal. As a shell does for
# the job in its foreground, SIGINT and SIGQUIT are set back to their defaults: tests run in
# the background of a script inherit them ignored (bash ignores both for `cmd &` without job
# control), and a `watch` started so never saw its Ctrl-C.
CONTROLLING = ("import os, signal, sys; os.close(os.open(os.ttyname(0), os.O_RDWR)); "
               "signal.signal(signal.SIGINT, signal.SIG_DFL); signal.signal(signal.SIGQUIT, signal.SIG_DFL); "
               "os.execv(sys.argv[1], sys.argv[1:])")


class Terminal:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=dict(env, PYTHONFAULTHANDLER="1"), cwd=ROOT,
                                     close_fds=True, start_new_session=True)
        os.close(slave)
        self.screen = ""

    def expect(self, text: str, timeout_s: float = 30, times: int = 1) -> None:
        deadline = time.monotonic() + timeout_s
        while self.screen.count(text) < times:
            assert time.monotonic() < deadline, f"never saw {text!r}; screen:\n{self.screen[-2000:]}"
            if self._read(0.1) is None:
                break

    def until(self, done, timeout_s: float = 60) -> None:
        """Read what the program writes until ``done(screen)`` holds."""
        deadline = time.monotonic() + timeout_s
        while not done(self.screen):
            assert time.monotonic() < deadline, f"never came; screen:\n{self.screen[-2000:]}"
            if self._read(0.1) is None:
                break

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def press(self, keys: str) -> None:
        r"""Keys as typed: ``\x03`` is Ctrl-C, ``\x04`` Ctrl-D."""
        os.write(self.master, keys.encode())

    def wait(self, timeout_s: float = 30) -> int:
        """The program's exit status, reading what it writes until it ends, and then what it
        wrote last (still in the terminal's buffer when it exited)."""
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None:
            if time.monotonic() >= deadline:
                self._dump_stacks()
                raise AssertionError(f"still running; screen:\n{self.screen[-6000:]}")
            if self._read(0.1) is None:
                break
        while self._read(0.2) and time.monotonic() < deadline:
            pass
        return self.proc.wait(10)

    def _dump_stacks(self) -> None:
        """Where a program that should have ended is stuck: its threads' stacks, written to
        the terminal by faulthandler (PYTHONFAULTHANDLER) on SIGABRT."""
        self.proc.send_signal(signal.SIGABRT)
        stop = time.monotonic() + 3
        while time.monotonic() < stop and self._read(0.2) is not None:
            pass

    def _read(self, timeout_s: float) -> bool | None:
        """Adds to the screen what the program wrote within the time: whether it wrote, or
        None once the terminal is closed on its side (EIO) and nothing more will come."""
        if not select.select([self.master], [], [], timeout_s)[0]:
            return False
        try:
            chunk = os.read(self.master, 4096)
        except OSError:
            return None
        self.screen += chunk.decode(errors="replace")
        return bool(chunk) or None

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self.master)


async def test_watch_asks_for_approval_inline_at_a_terminal(client, task_queue, workspace):
    (workspace / "build").mkdir()
    steps = [tool("shell", command="rm -rf build"), tool("message", type="result", text="cleaned")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TERM="xterm", COLUMNS="200")
        term = Terminal([sys.executable, str(ROOT / "starter.py"), "watch", handle.id], env)
        try:
            await asyncio.to_thread(term.expect, "approve? [y/N/a]")
            assert "rm -rf build" in term.screen and "deletes recursively" in term.screen
            term.type("y")
            await asyncio.to_thread(term.expect, "reason (optional):")
            term.type("fine, it is generated")
            outcome: TaskOutcome = await asyncio.wait_for(outcome_of(handle), 30)
            await asyncio.to_thread(term.expect, "DONE")
        finally:
            term.close()
        page = await handle.query("events", 0)
    assert outcome.status == TaskState.DONE and not (workspace / "build").exists()
    assert "fine, it is generated" in str(page)
    assert Screen(200).feed(term.screen).text().count("→ shell") == 1  # the call's line, not again at its prompt


def watch_at_a_terminal(client, workflow_id: str) -> Terminal:
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TERM="xterm", COLUMNS="200")
    return Terminal([sys.executable, str(ROOT / "starter.py"), "watch", workflow_id], env)


async def test_a_prompt_decided_elsewhere_disappears_and_says_who_decided(client, task_queue, workspace):
    steps = [tool("shell", command="git push origin feature"), tool("message", type="result", text="pushed")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        pending = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
        assert pending is not None
        term = watch_at_a_terminal(client, handle.id)
        try:
            await asyncio.to_thread(term.expect, "approve? [y/N/a]")
            os.write(term.master, b"y")  # half an answer, then someone else decides
            await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
                approved=True, digest=pending.digest, decided_by="ops-in-the-ui"))
            await asyncio.to_thread(term.expect, "DONE")
        finally:
            term.close()
    shown = Screen(200).feed(term.screen).text()
    assert "approve? [" not in shown  # the prompt was erased
    assert "shell call call_1_0 was decided elsewhere" in shown
    assert "shell call approved by ops-in-the-ui" in shown
    assert (await outcome_of(handle)).status == TaskState.DONE


async def test_ctrl_c_at_the_approval_prompt_ends_watch_at_once_and_the_task_waits_on(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("shell", command="git push origin feature")]):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        term = watch_at_a_terminal(client, handle.id)
        try:
            await asyncio.to_thread(term.expect, "approve? [y/N/a]")
            os.write(term.master, b"\x03")  # Ctrl-C, through the terminal's line discipline
            code = await asyncio.to_thread(term.wait, 20)  # a bound, not a timing: it used to hang
        finally:
            term.close()
        assert code == 130
        assert (await handle.query(AgentTaskWorkflow.status)).state == TaskState.WAITING_APPROVAL
        await handle.terminate("seen enough")


async def test_yes_and_allow_commands_like_this_at_the_prompt_lets_the_next_push_run_unasked(
    client, task_queue, workspace
):
    steps = [
        tool("shell", command="git push origin feature"),
        tool("shell", command="git push origin feature2"),
        tool("message", type="ask", text="Anything else?"),
    ]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        term = watch_at_a_terminal(client, handle.id)
        try:
            await asyncio.to_thread(term.expect, "= yes, and allow shell(git push origin) for the rest of this task")
            await asyncio.to_thread(term.expect, "approve? [y/N/a]")
            term.type("a")
            await asyncio.to_thread(term.expect, "reason (optional):")
            term.type("")
            await asyncio.to_thread(term.expect, "Anything else?")
        finally:
            term.close()
        code, out, err = await cli(client, "status", handle.id, queue=task_queue)
        await handle.terminate("seen enough")
    assert term.screen.count("approve? [") == 1  # feature2 was not asked
    assert "runs without asking: allowed by the rule shell(git push origin)" in term.screen
    assert code == 0, err
    assert 'allowed:  shell(git push origin) (for this task, answered "allow commands like this")' in out

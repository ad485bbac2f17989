"""The CLI at a real (pseudo) terminal: `watch` asks inline for an approval and sends it."""

from __future__ import annotations

import asyncio
import os
import pty
import select
import subprocess
import sys
import time
from pathlib import Path

from contracts.task import TaskOutcome, TaskState
from fakes.scripted import tool
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, wait_for_state

ROOT = Path(__file__).resolve().parents[2]


# Runs the command with the terminal as its controlling terminal (a new session that opens
# it), so Ctrl-C typed there is a SIGINT to it, as in a person's terminal.
CONTROLLING = ("import os, sys; os.close(os.open(os.ttyname(0), os.O_RDWR)); "
               "os.execv(sys.argv[1], sys.argv[1:])")


class Terminal:
    def __init__(self, args: list[str], env: dict[str, str]) -> None:
        self.master, slave = pty.openpty()
        self.proc = subprocess.Popen([sys.executable, "-c", CONTROLLING, *args], stdin=slave, stdout=slave,
                                     stderr=slave, env=env, cwd=ROOT, close_fds=True, start_new_session=True)
        os.close(slave)
        self.screen = ""

    def expect(self, text: str, timeout_s: float = 30, times: int = 1) -> None:
        deadline = time.monotonic() + timeout_s
        while self.screen.count(text) < times:
            assert time.monotonic() < deadline, f"never saw {text!r}; screen:\n{self.screen[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break

    def type(self, line: str) -> None:
        os.write(self.master, (line + "\n").encode())

    def press(self, keys: str) -> None:
        r"""Keys as typed: ``\x03`` is Ctrl-C, ``\x04`` Ctrl-D."""
        os.write(self.master, keys.encode())

    def wait(self, timeout_s: float = 30) -> int:
        """The program's exit status, reading what it writes until it ends."""
        deadline = time.monotonic() + timeout_s
        while self.proc.poll() is None:
            assert time.monotonic() < deadline, f"still running; screen:\n{self.screen[-2000:]}"
            ready, _, _ = select.select([self.master], [], [], 0.1)
            if ready:
                try:
                    self.screen += os.read(self.master, 4096).decode(errors="replace")
                except OSError:
                    break
        return self.proc.wait(10)

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
            await asyncio.to_thread(term.expect, "approve? [y/N]")
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

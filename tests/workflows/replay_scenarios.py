"""Scripted scenarios whose histories are recorded and replayed on every change.

Record (a new release's version, or a new scenario; docs/patches.md says when):
    python -m tests.workflows.replay_scenarios [--only NAME ...]
``--only`` records just the named scenarios (a new one) and leaves the others' files alone.
Each run of a task (continue-as-new starts a new one) is saved as its own file,
named ``<scenario>.<VERSION>.run<N>.json``.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

from temporalio.client import Client, WorkflowHandle

from contracts.task import ApprovalDecision, Interjection, TaskState
from core.permissions import parse_permissions
from fakes.scripted import ScriptedModelServer, error, text, tool
from fakes.step import Step
from temporal.server import start_local_env
from tests.mcp_support import kit_stdio
from tests.workflows.harness import make_input, outcome_of, scripted_worker, wait_for_state, wait_until
from workflows.task import AgentTaskWorkflow

HISTORIES = Path(__file__).resolve().parent.parent / "histories"
# The histories recorded on the current release (workflows.policy.RELEASE_PATCH): a new release
# bumps it; the previous release's recordings stay while its runs are supported (docs/patches.md).
VERSION = "v8"
Driver = Callable[[WorkflowHandle, ScriptedModelServer], Awaitable[None]]


async def _no_driver(handle: WorkflowHandle, model: ScriptedModelServer) -> None:
    return None


async def _people(handle: WorkflowHandle, model: ScriptedModelServer) -> None:
    first = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
    assert first is not None
    await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
        approved=False, digest=first.digest, reason="no", decided_by="replay"))
    while (pending := (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval) == first:
        await asyncio.sleep(0.05)
    assert pending is not None
    await handle.signal(AgentTaskWorkflow.approve, ApprovalDecision(approved=True, digest=pending.digest, decided_by="replay"))
    await wait_for_state(handle, TaskState.WAITING_REPLY)
    await handle.signal(AgentTaskWorkflow.interject, Interjection(text="the answer"))
    await wait_until(lambda: model.hits() == 5)
    await handle.signal(AgentTaskWorkflow.interject, Interjection(text="cut it short"))
    model.release()


async def _permissions(handle: WorkflowHandle, model: ScriptedModelServer) -> None:
    pending = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
    assert pending is not None
    # As a person sends it by hand: raw JSON, with "allow commands like this".
    await handle.execute_update("decide", {"approved": True, "digest": pending.digest, "remember": True})


@dataclass
class Scenario:
    steps: list[Step]
    overrides: dict = field(default_factory=dict)
    driver: Driver = _no_driver


SCENARIOS: dict[str, Scenario] = {
    "full_loop": Scenario([
        text("thinking out loud"),
        Step(tool_calls=[("file", {"action": "write", "path": "a.txt", "content": "A"}),
                         ("shell", {"command": "cat a.txt"})]),
        tool("teleport", to="mars"),
        Step(tool_calls=[("shell", '{"command": ')]),
        error(503, "overloaded"),
        tool("shell", command="cat a.txt"),
        tool("message", type="info", text="almost there"),
        tool("message", type="result", text="done"),
    ]),
    "people": Scenario(
        [
            tool("shell", command="sudo rm -rf /tmp/nothing-here"),
            tool("shell", command="git push --dry-run"),
            tool("message", type="ask", text="which answer?"),
            tool("file", action="list", path="."),
            Step(tool_calls=[("shell", {"command": "sleep 30"})], hold=True),
            tool("message", type="result", text="done"),
        ],
        {"search_attributes": True},
        _people,
    ),
    "continue_as_new": Scenario(
        [tool("file", action="list", path=".") if i % 2 else tool("shell", command=f"echo {i}") for i in range(5)]
        + [tool("message", type="result", text="done")],
        {"continue_as_new_after": 2, "context_window": 2000},
    ),
    # A remembered rule (kept across continue-as-new) lets the second push run unasked; a
    # standing deny rule refuses a call the approval mode would run.
    "permissions": Scenario(
        [
            tool("shell", command="git push origin feature"),
            tool("shell", command="git push origin feature2"),
            tool("file", action="write", path="notes.md", content="x"),
            tool("message", type="result", text="done"),
        ],
        {"continue_as_new_after": 1, "permissions": parse_permissions('deny = ["file"]', source="permissions.toml")},
        _permissions,
    ),
    # The test MCP server over stdio (tests/mcp_test_server.py, run by this venv's Python): the
    # listing activity at the start, then a call through the tool activity. Replay reruns no
    # activity, so the paths recorded in the task's configuration need not exist elsewhere.
    "mcp": Scenario(
        [
            tool("mcp__kit__echo", text="replayed"),
            tool("message", type="result", text="done"),
        ],
        {"mcp_servers": {"kit": kit_stdio()}},
    ),
    # A reply's reads running together (local and ordinary activities) around one command,
    # a later call deferred; then the verification reminder before the task may finish. The
    # command writes: a read-only one after the first would be the check, and no reminder come
    # (the recorded v8 run's ``cat a.txt b.txt`` predates that and replays as it ran).
    "verify_parallel": Scenario(
        [
            tool("shell", command="printf A > a.txt && printf B > b.txt"),
            Step(tool_calls=[("file", {"action": "read", "path": "a.txt"}), ("file", {"action": "grep", "pattern": "B"}),
                             ("file", {"action": "read", "path": "b.txt"}), ("shell", {"command": "cat a.txt b.txt > ab.txt"}),
                             ("file", {"action": "list", "path": "."}), ("shell", {"command": "echo deferred"})]),
            tool("message", type="result", text="done"),
            tool("shell", command="test -s a.txt"),
            tool("message", type="result", text="done"),
        ],
        {"verify": "auto"},
    ),
    # A page held by the worker: the page tools offered once it is open, the browser's state
    # recorded from each result, a screenshot kept as a blob reference, and the closing
    # activity at the end. A data: URL needs no network and no server.
    "browser": Scenario(
        [
            tool("visit", url="data:text/html,<title>Replay</title><h1>Replayed</h1><a href='#more'>more</a>"),
            tool("view"),
            tool("screenshot"),
            tool("message", type="result", text="done"),
        ],
    ),
}


async def record_histories(client: Client, task_queue: str, workspace: Path, scenario: Scenario) -> list[str]:
    """Run the scenario; the history JSON of each of its runs, first to last."""
    async with scripted_worker(client, task_queue, scenario.steps) as model:
        handle = await client.start_workflow(
            AgentTaskWorkflow.run, make_input(workspace, "replay scenario", **scenario.overrides),
            id=f"replay-{uuid.uuid4().hex[:8]}", task_queue=task_queue,
        )
        await scenario.driver(handle, model)
        await outcome_of(handle)
        model.assert_consumed()
    runs = [wf.run_id async for wf in client.list_workflows(f"WorkflowId = '{handle.id}'")]
    bodies = []
    for run_id in reversed(runs):  # the list is newest first
        history = await client.get_workflow_handle(handle.id, run_id=run_id).fetch_history()
        bodies.append(history.to_json())
    return bodies


async def main(only: list[str] | None = None) -> None:
    """Record every scenario, or only those named (their files alone are replaced)."""
    names = only or list(SCENARIOS)
    unknown = sorted(set(names) - set(SCENARIOS))
    if unknown:
        raise SystemExit(f"no such scenario: {', '.join(unknown)} (known: {', '.join(SCENARIOS)})")
    HISTORIES.mkdir(exist_ok=True)
    stale = [HISTORIES.glob(f"{name}.{VERSION}.*.json") for name in names] if only else [
        HISTORIES.glob(f"*.{VERSION}.*.json")]
    for old in [path for found in stale for path in found]:
        old.unlink()
    env = await start_local_env()
    try:
        for name in names:
            scenario = SCENARIOS[name]
            with tempfile.TemporaryDirectory() as ws:
                bodies = await record_histories(env.client, f"record-{name}", Path(ws), scenario)
            for index, body in enumerate(bodies, 1):
                (HISTORIES / f"{name}.{VERSION}.run{index}.json").write_text(body)
            print(f"recorded {name}: {len(bodies)} run(s)")
    finally:
        await env.shutdown()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Record the replay scenarios' histories.")
    parser.add_argument("--only", nargs="+", metavar="NAME", choices=list(SCENARIOS),
                        help="record only these scenarios")
    asyncio.run(main(parser.parse_args().only))

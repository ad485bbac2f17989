"""People reach a task from the CLI however it runs: a sub-agent's pending approval shows in
its parent's `watch` and in `list --pending` and is answered by the parent's id; a message
sent while no worker runs says so at once and takes effect when one starts."""

from __future__ import annotations

import asyncio
import json
import os
import sys

from contracts.task import TaskState
from fakes.scripted import tool
from tests.cli.test_cli import ROOT, cli
from tests.workflows.harness import make_input, scripted_worker, start, user_texts, wait_for_state


async def read_events(stream: asyncio.StreamReader, until: str, seen: list[dict], timeout_s: float = 30) -> dict:
    """Read `watch --json` lines into ``seen`` until an event of type ``until``; return it."""
    while True:
        line = await asyncio.wait_for(stream.readline(), timeout_s)
        assert line, f"watch ended before {until}: {seen}"
        seen.append(json.loads(line))
        if seen[-1]["type"] == until:
            return seen[-1]


async def test_a_subagents_pending_approval_shows_in_its_parent_and_is_answered_by_the_parents_id(
    client, task_queue, workspace
):
    steps = [
        tool("spawn", task="publish the branch"),  # the parent
        tool("shell", command="git push origin main"),  # its sub-agent: dangerous, so it waits
        tool("message", type="result", text="pushed"),  # the sub-agent, after the approval
        tool("message", type="result", text="published"),  # the parent, with the sub-agent's summary
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "--verify", "off", "publish", queue=task_queue)
        assert code == 0, err
        parent_id = out.strip().splitlines()[-1]
        child_id = f"{parent_id}-sub1"
        environ = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host,
                       TEMPORAL_NAMESPACE="default", AGENT_TASK_QUEUE=task_queue)
        watch, console = [
            await asyncio.create_subprocess_exec(
                sys.executable, str(ROOT / "starter.py"), "watch", parent_id, *flags, cwd=ROOT, env=environ,
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            )
            for flags in (["--json"], [])
        ]
        try:
            assert watch.stdout is not None
            events: list[dict] = []
            asked = await read_events(watch.stdout, "approval.requested", events)
            assert asked["workflow_id"] == child_id and asked["subagent"] is True
            assert asked["tool"] == "shell" and asked["arguments"] == {"command": "git push origin main"}

            code, out, err = await cli(client, "list", "--pending", queue=task_queue)
            assert code == 0, err
            row = next(line for line in out.splitlines() if line.startswith(child_id))
            assert "WAITING_APPROVAL" in row and f"sub-agent of {parent_id}" in row
            assert "git push origin main" in out and f"approve {parent_id}" in out
            assert not any(line.startswith(parent_id + " ") for line in out.splitlines())  # the parent is busy, not waiting
            code, out, _ = await cli(client, "list", "--waiting", queue=task_queue)  # the older name
            assert code == 0 and child_id in out

            code, out, err = await cli(client, "approve", parent_id, "--yes", "--reason", "ship it", queue=task_queue)
            assert code == 0, err
            assert f"sub-agent {child_id} of {parent_id}" in out and "git push origin main" in out
            assert f"approved: shell call {asked['call_id']} of {child_id}" in out

            done = await read_events(watch.stdout, "task.completed", events)
            assert await asyncio.wait_for(watch.wait(), 10) == 0
            shown, _ = await asyncio.wait_for(console.communicate(), 10)
        finally:
            for proc in (watch, console):
                if proc.returncode is None:
                    proc.kill()
    lines = shown.decode().splitlines()
    asked_lines = [line for line in lines if line.startswith("? approval needed")]
    assert len(asked_lines) == 1 and f"(sub-agent {child_id} of {parent_id}) shell" in asked_lines[0]
    assert any(f"python starter.py approve {child_id} --call {asked['call_id']}" in line for line in lines)
    assert "DONE" in shown.decode()
    assert done["status"] == "DONE" and done["final_text"] == "published"
    assert [e for e in events if e["type"] == "approval.requested"] == [asked]  # asked once
    # Each turn's own usage (10 in / 5 out a call); the sub-agent's two calls count in the turn that spawned it.
    turns = [(e["turn"], e["usage"]["input_tokens"], e["usage"]["output_tokens"]) for e in events
             if e["type"] == "turn.completed"]
    assert turns == [(1, 30, 15), (2, 10, 5)]
    assert (done["usage"]["input_tokens"], done["usage"]["output_tokens"]) == (40, 20)
    model.assert_consumed()
    assert "not a git repository" in json.dumps(model.requests[2]["messages"])  # the approved command ran


async def test_interject_without_a_worker_says_so_quickly_and_takes_effect_when_one_starts(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [tool("message", type="ask", text="Which branch?")]):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "release it", queue=task_queue)
        workflow_id = out.strip().splitlines()[-1]
        handle = client.get_workflow_handle(workflow_id)
        await wait_for_state(handle, TaskState.WAITING_REPLY)
    # The worker is gone (Temporal still lists it as a recent poller for a while).
    code, out, err = await cli(client, "reply", workflow_id, "the release branch", queue=task_queue)
    assert code == 0, err
    # Quickly: within its stated bound (not a wall-clock assertion: CI's load makes those flaky).
    assert out.startswith(f"no worker answered for task {workflow_id} within 6 s") and f"task queue {task_queue}" in out
    assert "the message was delivered" in out and "python starter.py worker" in out and "Traceback" not in err

    steps = [tool("message", type="result", text="released")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await asyncio.wait_for(handle.result(), 30)
        code, out, err = await cli(client, "interject", workflow_id, "too late", queue=task_queue)
    assert outcome["status"] == "DONE"
    assert "the release branch" in user_texts(model.requests[0])[-1]
    assert code == 2 and "is not running" in err


async def test_interject_on_a_queue_no_worker_ever_polled_says_so_at_once(client, task_queue, workspace):
    handle = await start(client, task_queue, make_input(workspace))
    code, out, err = await cli(client, "interject", handle.id, "also check the docs", queue=task_queue)
    assert code == 0, err
    assert out.strip() == (f"no worker is polling task queue {task_queue}: the message was delivered to "
                           f"{handle.id} and takes effect when a worker starts (python starter.py worker)")
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="ok")]) as model:
        await asyncio.wait_for(handle.result(), 30)
    assert any("also check the docs" in text for text in user_texts(model.requests[0]))


async def test_approve_by_the_parents_id_and_a_subagents_call_id_without_a_worker_reaches_the_subagent(
    client, task_queue, workspace
):
    steps = [tool("spawn", task="clean up"), tool("shell", command="rm -rf build")]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(client, "start", "--workspace", str(workspace), "--verify", "off", "tidy", queue=task_queue)
        parent_id = out.strip().splitlines()[-1]
        child = client.get_workflow_handle(f"{parent_id}-sub1")
        await wait_until_exists(child)
        pending = (await wait_for_state(child, TaskState.WAITING_APPROVAL)).pending_approval
    code, out, err = await cli(client, "approve", parent_id, "--call", pending.call_id, "--deny", "--reason", "keep it",
                               queue=task_queue)
    assert code == 0, err
    assert f"the decision was sent to {child.id} as a signal" in out
    steps = [tool("message", type="result", text="kept"), tool("message", type="result", text="tidied")]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await asyncio.wait_for(client.get_workflow_handle(parent_id).result(), 30)
    assert outcome["status"] == "DONE"
    assert "keep it" in json.dumps(model.requests[0]["messages"])  # the sub-agent read the denial


async def wait_until_exists(handle, timeout_s: float = 20) -> None:
    from temporalio.service import RPCError

    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        try:
            await handle.describe()
            return
        except RPCError:
            assert asyncio.get_running_loop().time() < deadline, f"{handle.id} never started"
            await asyncio.sleep(0.1)


async def test_approve_remember_allows_commands_like_this_for_the_rest_of_the_task(client, task_queue, workspace):
    steps = [tool("shell", command="git push origin feature"), tool("shell", command="git push origin feature2"),
             tool("message", type="ask", text="Anything else?")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        code, out, err = await cli(client, "approve", handle.id, "--yes", "--remember", queue=task_queue)
        assert code == 0, err
        assert "a = yes, and allow shell(git push origin) for the rest of this task" in out
        assert "approved: shell call call_1_0" in out and "shell(git push origin) is allowed for the rest of the task" in out
        status = await wait_for_state(handle, TaskState.WAITING_REPLY)  # the second push did not ask
        await handle.terminate("seen enough")
    assert status.allowed == ["shell(git push origin)"]

"""`list` as people and scripts use it, against the test session's dev server: the columns under
a header, `--json` with the same fields, each filter a clause of the Temporal query that narrows
the rows, and a list cut by `--limit` saying how many more there are and how to see them."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

from contracts.task import TaskState
from fakes.scripted import tool
from tests import configured
from tests.cli.test_cli import cli
from tests.workflows.harness import make_input, scripted_worker, wait_for_state, wait_until
from workflows.search_attributes import AGENT_COST

HEADER = ["TASK", "STATE", "TURN", "COST", "AGE", "INSTRUCTION"]


def finish(text: str):
    return tool("message", type="result", text=text)


def rows(out: str) -> list[str]:
    """The task rows of a table (what follows the header, up to the note of any more)."""
    lines = out.splitlines()
    assert lines[0].split() == HEADER, out
    return [line for line in lines[1:] if line.strip() and not line.startswith((" ", "…")) and " more not shown" not in line]


def ids(out: str) -> list[str]:
    return [line.split()[0] for line in rows(out)]


async def start_in(client, queue, workspace, instruction: str, session: str) -> str:
    from cli.tasks import start_task  # as `start` does: memo, summary and search attributes

    return await start_task(client, make_input(workspace, instruction, session=session), queue,
                            configured.settings().temporal)


async def test_each_filter_narrows_the_list_by_a_clause_of_the_temporal_query(client, task_queue, workspace):
    mine, other = f"list-{uuid.uuid4().hex[:8]}", f"list-{uuid.uuid4().hex[:8]}"
    steps = [finish("tidied"), tool("shell", command="sudo true"), tool("shell", command="sudo make install"), finish("ok")]
    async with scripted_worker(client, task_queue, steps):
        done = await start_in(client, task_queue, workspace, "Tidy the notes in this folder", mine)
        await client.get_workflow_handle(done).result()
        first = await start_in(client, task_queue, workspace, "Check who may sudo", mine)
        await wait_for_state(client.get_workflow_handle(first), TaskState.WAITING_APPROVAL)
        second = await start_in(client, task_queue, workspace, "Install the tool", mine)
        await wait_for_state(client.get_workflow_handle(second), TaskState.WAITING_APPROVAL)
        elsewhere = await start_in(client, task_queue, workspace, "Something else", other)
        await client.get_workflow_handle(elsewhere).result()

        # --session: this session's three tasks, the running ones first, with every column.
        code, out, err = await cli(client, "list", "--session", mine, queue=task_queue)
        assert code == 0, err
        assert set(ids(out)) == {done, first, second} and ids(out)[-1] == done
        (row,) = [line for line in rows(out) if line.startswith(done)]
        assert row.split()[1:3] == ["DONE", "1"] and row.split()[3].startswith("$")
        assert row.endswith("Tidy the notes in this folder") and row.split()[4].endswith("s")
        code, out, _ = await cli(client, "list", "--session", mine, "--json", queue=task_queue)
        listed = {r["workflow_id"]: r for r in json.loads(out)}
        assert set(listed) == {done, first, second}
        desc = await client.get_workflow_handle(done).describe()
        assert listed[done]["state"] == "DONE" and listed[done]["turn"] == 1 and listed[done]["temporal_status"] == "COMPLETED"
        assert listed[done]["cost_usd"] == desc.typed_search_attributes.get(AGENT_COST)
        assert listed[done]["instruction"] == "Tidy the notes in this folder" and listed[done]["age_s"] >= 0
        assert listed[first]["state"] == "WAITING_APPROVAL" and listed[first]["parent_id"] is None
        code, out, _ = await cli(client, "list", "--session", other, queue=task_queue)
        assert ids(out) == [elsewhere]

        # --state, one or several; and a limit that cuts the list says how many more, the
        # command that shows them all, and the query (with this filter's clause) for Temporal's CLI.
        code, out, _ = await cli(client, "list", "--session", mine, "--state", "done", queue=task_queue)
        assert ids(out) == [done]
        code, out, _ = await cli(client, "list", "--session", mine, "--state", "waiting_approval,done", queue=task_queue)
        assert set(ids(out)) == {done, first, second}
        code, out, _ = await cli(client, "list", "--session", mine, "--state", "WAITING_APPROVAL", "--limit", "1",
                                 queue=task_queue)
        assert len(ids(out)) == 1 and ids(out)[0] in {first, second}
        assert f"1 more not shown (1 of 2): python starter.py list --state WAITING_APPROVAL --session {mine} --limit 2" in out
        assert "(AgentState = 'WAITING_APPROVAL' AND ExecutionStatus = 'Running')" in out
        assert f"AgentSession = '{mine}'" in out and "temporal workflow list --query" in out
        code, out, _ = await cli(client, "list", "--session", mine, "--state", "RUNNING", queue=task_queue)
        assert code == 0 and out.strip() == "no tasks found"

        # --pending the same way: the rows that fit, what each waits for, and how many more.
        code, out, _ = await cli(client, "list", "--pending", "--session", mine, "--limit", "1", queue=task_queue)
        (shown,) = ids(out)
        assert "python starter.py approve " + shown in out and "1 more not shown (1 of 2)" in out
        assert f"list --pending --session {mine} --limit 2" in out
        code, out, err = await cli(client, "list", "--pending", "--session", mine, "--limit", "1", "--json", queue=task_queue)
        assert len(json.loads(out)) == 1 and "1 more not shown (1 of 2)" in err  # the JSON stays one array

        # --since: a duration back from now, or a date; what started before it is left out.
        code, out, _ = await cli(client, "list", "--session", mine, "--since", "1h", queue=task_queue)
        assert set(ids(out)) == {done, first, second}
        tomorrow = (datetime.now(UTC) + timedelta(days=1)).date().isoformat()
        code, out, _ = await cli(client, "list", "--session", mine, "--since", tomorrow, queue=task_queue)
        assert out.strip() == "no tasks found"
        code, out, _ = await cli(client, "list", "--session", mine, "--since", "2020-01-01", "--limit", "1",
                                 queue=task_queue)
        assert "StartTime >= '2020-01-01T00:00:00Z'" in out and "2 more not shown (1 of 3)" in out

        code, _, err = await cli(client, "list", "--state", "asleep")
        assert code == 2 and "unknown state ASLEEP" in err and "WAITING_APPROVAL" in err
        code, _, err = await cli(client, "list", "--since", "last tuesday")
        assert code == 2 and "invalid --since" in err
        for handle in (client.get_workflow_handle(first), client.get_workflow_handle(second)):
            await handle.terminate(reason="the test is over")


async def test_a_subagent_is_listed_under_its_parent_with_its_own_instruction(client, task_queue, workspace):
    steps = [
        tool("spawn", task="publish the branch"),  # the parent
        tool("shell", command="git push origin main"),  # its sub-agent: dangerous, so it waits
    ]
    began = (datetime.now(UTC) - timedelta(seconds=1)).strftime("%Y-%m-%dT%H:%M:%S")
    async with scripted_worker(client, task_queue, steps) as model:
        parent = await start_in(client, task_queue, workspace, "Publish the work", f"sub-{uuid.uuid4().hex[:6]}")
        child = f"{parent}-sub1"
        await wait_until(lambda: len(model.requests) >= 2)  # the sub-agent's first call: it runs
        await wait_for_state(client.get_workflow_handle(child), TaskState.WAITING_APPROVAL)
        code, out, err = await cli(client, "list", "--since", began, "--limit", "500", queue=task_queue)
        assert code == 0, err
        lines = out.splitlines()
        at = next(i for i, line in enumerate(lines) if line.startswith(parent + " "))
        assert lines[at + 1].startswith(f"  {child} ") and "WAITING_APPROVAL" in lines[at + 1]
        assert lines[at + 1].endswith("publish the branch") and "sub-agent of" not in lines[at + 1]
        code, out, _ = await cli(client, "list", "--since", began, "--limit", "500", "--json", queue=task_queue)
        listed = json.loads(out)
        at = next(i for i, r in enumerate(listed) if r["workflow_id"] == parent)
        assert listed[at + 1]["workflow_id"] == child and listed[at + 1]["parent_id"] == parent
        assert listed[at + 1]["depth"] == 1 and listed[at + 1]["instruction"] == "publish the branch"
        await client.get_workflow_handle(parent).terminate(reason="the test is over")


async def test_a_session_is_found_before_a_worker_runs_the_task_and_a_quote_in_its_name_matches(
    client, task_queue, workspace
):
    from cli.task_listing import TaskFilter, find

    session = f"bob's 'notes' {uuid.uuid4().hex[:6]}"
    workflow_id = await start_in(client, task_queue, workspace, "Read the notes", session)  # no worker polls
    handle = client.get_workflow_handle(workflow_id)
    try:
        await wait_until_listed(client, workflow_id)
        page = await find(client, TaskFilter(session=session), 5)
        assert [r.workflow_id for r in page.rows] == [workflow_id] and page.total == 1
        assert page.rows[0].instruction == "Read the notes" and page.rows[0].turn == 0
        assert (await find(client, TaskFilter(session=session[:-1]), 5)).rows == []
    finally:
        await handle.terminate(reason="the test is over")
    code, _, err = await cli(client, "list", "--session", "C:\\work")
    assert code == 2 and "match no value with a backslash" in err and "Traceback" not in err


async def wait_until_listed(client, workflow_id: str) -> None:
    import asyncio

    for _ in range(100):
        if [wf async for wf in client.list_workflows(f"WorkflowId = '{workflow_id}'")]:
            return
        await asyncio.sleep(0.1)
    raise AssertionError(f"{workflow_id} never listed")

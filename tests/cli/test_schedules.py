"""Scheduled tasks against the test session's dev server: the library, then the CLI."""

from __future__ import annotations

import asyncio
import json
import uuid
from datetime import timedelta

import pytest
from temporalio.client import ScheduleOverlapPolicy

from cli.task_schedules import (
    CATCHUP_WINDOW,
    InvalidSchedule,
    ScheduleExists,
    ScheduleNotFound,
    ScheduleSummary,
    create_task_schedule,
    delete_task_schedule,
    describe_task_schedule,
    list_task_schedules,
    parse_interval,
    trigger_task_schedule,
)
from contracts.task import TaskState
from fakes.scripted import tool
from tests.cli.test_cli import cli
from tests.workflows.harness import make_input, scripted_worker, wait_for_state

NEVER_SOON = "0 0 1 1 *"  # midnight on New Year's Day: never fires during a test


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


async def poll(check, timeout_s: float = 20.0, every_s: float = 0.1):
    """Call ``check`` until it returns something truthy; return that."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        value = await check()
        if value:
            return value
        assert asyncio.get_running_loop().time() < deadline, "timed out waiting"
        await asyncio.sleep(every_s)


async def listed(client, name: str) -> ScheduleSummary | None:
    return next((s for s in await list_task_schedules(client) if s.name == name), None)


# ---- pure ----------------------------------------------------------------------------


def test_parse_interval_reads_seconds_minutes_hours_and_days():
    assert parse_interval("30s") == timedelta(seconds=30)
    assert parse_interval("5m") == timedelta(minutes=5)
    assert parse_interval("2h") == timedelta(hours=2)
    assert parse_interval("1d") == timedelta(days=1)
    assert parse_interval("45") == timedelta(seconds=45)
    for bad in ("", "0s", "5 minutes", "-3s", "1.5h"):
        with pytest.raises(InvalidSchedule):
            parse_interval(bad)


# ---- the library ---------------------------------------------------------------------


async def test_interval_schedule_starts_a_task_that_runs_to_done(client, task_queue, workspace):
    name = unique("tick")
    steps = [tool("message", type="result", text="scheduled and done")] * 3  # spare steps for late ticks
    async with scripted_worker(client, task_queue, steps):
        await create_task_schedule(
            client, name, None, make_input(workspace, "tidy up"), task_queue=task_queue, every=timedelta(seconds=2)
        )
        try:
            first = await poll(lambda: _first_run(client, name))
        finally:
            await delete_task_schedule(client, name)
        assert first.workflow_id.startswith(f"sched-{name}-")
        outcome = await client.get_workflow_handle(first.workflow_id).result()
    assert outcome["status"] == "DONE" and outcome["final_text"] == "scheduled and done"


async def _first_run(client, name):
    summary = await describe_task_schedule(client, name)
    return summary.recent_runs[0] if summary.recent_runs else None


async def test_triggered_run_is_recorded_with_its_status_and_task_memo(client, task_queue, workspace):
    name = unique("trig")
    steps = [tool("message", type="result", text="triggered ok")]
    async with scripted_worker(client, task_queue, steps):
        await create_task_schedule(client, name, NEVER_SOON, make_input(workspace, "check the logs"), task_queue=task_queue)
        try:
            workflow_id = await trigger_task_schedule(client, name)
            assert workflow_id is not None and workflow_id.startswith(f"sched-{name}-")
            outcome = await client.get_workflow_handle(workflow_id).result()
            assert outcome["status"] == "DONE"

            async def completed():
                last = (await describe_task_schedule(client, name)).last_run
                return last if last and last.status == "COMPLETED" else None

            last = await poll(completed)
            assert last.workflow_id == workflow_id
            desc = await client.get_workflow_handle(workflow_id).describe()
            memo = await desc.memo()
            assert memo == {"instruction": "check the logs", "workspace": str(workspace), "model": "scripted-model"}
            assert desc.workflow_type == "AgentTask" and desc.task_queue == task_queue
        finally:
            await delete_task_schedule(client, name)


async def test_list_shows_cron_and_next_run_and_delete_removes_it(client, task_queue, workspace):
    name = unique("daily")
    await create_task_schedule(client, name, "0 9 * * 1-5", make_input(workspace), task_queue=task_queue, note="standup")
    summary = await poll(lambda: listed(client, name))
    assert summary.cron == "0 9 * * 1-5" and summary.when == "0 9 * * 1-5"
    assert summary.next_runs and summary.next_runs[0].hour == 9 and summary.next_runs[0].weekday() < 5
    assert summary.overlap == "skip" and not summary.paused and summary.note == "standup"
    assert summary.recent_runs == [] and summary.instruction == "do the thing"

    await delete_task_schedule(client, name)
    with pytest.raises(ScheduleNotFound):
        await describe_task_schedule(client, name)
    await poll(lambda: _not_listed(client, name))


async def _not_listed(client, name):
    return await listed(client, name) is None


async def test_unknown_schedule_is_a_clear_error(client):
    for op in (describe_task_schedule, delete_task_schedule, trigger_task_schedule):
        with pytest.raises(ScheduleNotFound, match="^no schedule named nosuch$"):
            await op(client, "nosuch")


async def test_duplicate_schedule_is_a_clear_error(client, task_queue, workspace):
    name = unique("dup")
    await create_task_schedule(client, name, NEVER_SOON, make_input(workspace), task_queue=task_queue)
    try:
        with pytest.raises(ScheduleExists, match=f"^a schedule named {name} already exists$"):
            await create_task_schedule(client, name, "@daily", make_input(workspace), task_queue=task_queue)
    finally:
        await delete_task_schedule(client, name)


async def test_bad_name_cron_interval_and_overlap_are_rejected(client, task_queue, workspace):
    inp = make_input(workspace)
    for bad in ("Upper", "-lead", "has space", "x" * 64, ""):
        with pytest.raises(InvalidSchedule, match="invalid schedule name"):
            await create_task_schedule(client, bad, NEVER_SOON, inp, task_queue=task_queue)
    with pytest.raises(InvalidSchedule, match=r"^invalid cron expression '61 \* \* \* \*': Minute is not in range"):
        await create_task_schedule(client, unique("cron"), "61 * * * *", inp, task_queue=task_queue)
    with pytest.raises(InvalidSchedule, match="5-7 fields"):
        await create_task_schedule(client, unique("cron"), "every day", inp, task_queue=task_queue)
    with pytest.raises(InvalidSchedule, match="cron expression or an interval"):
        await create_task_schedule(client, unique("none"), None, inp, task_queue=task_queue)
    with pytest.raises(InvalidSchedule, match="unknown overlap policy 'sometimes'"):
        await create_task_schedule(client, unique("ovl"), NEVER_SOON, inp, task_queue=task_queue, overlap="sometimes")


async def test_overlap_policy_and_catchup_window_reach_temporal(client, task_queue, workspace):
    name = unique("pol")
    await create_task_schedule(client, name, NEVER_SOON, make_input(workspace), task_queue=task_queue, overlap="buffer_one")
    try:
        desc = await client.get_schedule_handle(f"agent-{name}").describe()
        assert desc.schedule.policy.overlap == ScheduleOverlapPolicy.BUFFER_ONE
        assert desc.schedule.policy.catchup_window == CATCHUP_WINDOW == timedelta(minutes=1)
        assert desc.schedule.action.workflow == "AgentTask"
        assert desc.schedule.action.id == f"sched-{name}"
        assert (await describe_task_schedule(client, name)).overlap == "buffer_one"
    finally:
        await delete_task_schedule(client, name)


# ---- the CLI ---------------------------------------------------------------------------


async def test_cli_schedule_create_list_trigger_and_delete(client, task_queue, workspace):
    name = unique("cli")
    steps = [tool("shell", command="rm -rf old-reports"), tool("message", type="result", text="from the cli")]
    async with scripted_worker(client, task_queue, steps):
        code, out, err = await cli(
            client, "schedule", "create", name, "--cron", "0 9 * * 1-5", "summarise the inbox",
            "--workspace", str(workspace), "--overlap", "buffer_one", "--verify", "off", queue=task_queue,
        )
        assert code == 0, err
        assert out.strip().startswith(f"created schedule {name}: 0 9 * * 1-5, next run ")

        async def listed_line():
            code, out, err = await cli(client, "schedule", "list")
            assert code == 0, err
            return next((line for line in out.splitlines() if line.startswith(f"{name} ")), None)

        line = await poll(listed_line)
        # A next run, no last run yet (so no state, turn, cost or age), and the instruction.
        assert "0 9 * * 1-5" in line and " 20" in line and line.split()[-8:] == ["-", "-", "-", "-", "-", "summarise", "the", "inbox"]
        code, out, _ = await cli(client, "schedule", "list")
        assert out.splitlines()[0].split() == [
            "SCHEDULE", "WHEN", "NEXT", "RUN", "(UTC)", "LAST", "RUN", "STATE", "TURN", "COST", "AGE", "INSTRUCTION",
        ]
        code, out, _ = await cli(client, "schedule", "list", "--json")
        (listed,) = [s for s in json.loads(out) if s["name"] == name]
        assert code == 0 and listed["cron"] == "0 9 * * 1-5" and listed["overlap"] == "buffer_one"
        assert listed["next_runs"] and listed["last_run"] is None

        code, out, err = await cli(client, "schedule", "trigger", name, queue=task_queue)
        assert code == 0, err
        workflow_id = out.strip().splitlines()[-1]
        assert workflow_id.startswith(f"sched-{name}-")

        # Unattended, but the default approval mode holds: the dangerous call waits for a person.
        await wait_for_state(client.get_workflow_handle(workflow_id), TaskState.WAITING_APPROVAL)

        async def waiting():
            code, out, _ = await cli(client, "list", "--waiting")
            return code == 0 and workflow_id in out

        await poll(waiting)
        code, out, err = await cli(client, "approve", workflow_id, "--yes")
        assert code == 0 and "approved: shell call" in out, err
        outcome = await client.get_workflow_handle(workflow_id).result()
        assert outcome["status"] == "DONE" and outcome["final_text"] == "from the cli"

        async def completed_line():
            line = await listed_line()
            return line if line and f" {workflow_id} " in line and line.split()[-7:-5] == ["DONE", "2"] else None

        line = await poll(completed_line)  # the last run as `list` shows it: state, turn, cost, age
        assert line.split()[-5].startswith("$") and line.endswith(" summarise the inbox")
        code, out, _ = await cli(client, "schedule", "list", "--json")
        (listed,) = [s for s in json.loads(out) if s["name"] == name]
        assert listed["last_run"]["workflow_id"] == workflow_id and listed["last_run"]["status"] == "COMPLETED"
        assert listed["last_run"]["state"] == "DONE" and listed["last_run"]["turn"] == 2

        code, out, err = await cli(client, "schedule", "delete", name)
        assert code == 0 and out.strip() == f"deleted schedule {name} (tasks it started run on)", err
        code, _, err = await cli(client, "schedule", "delete", name)
        assert code == 2 and err.strip() == f"error: no schedule named {name}"


async def test_cli_schedule_errors_are_one_clear_line(client, task_queue, workspace):
    name = unique("clierr")
    ws = str(workspace)
    code, _, err = await cli(client, "schedule", "create", name, "--cron", "61 * * * *", "x", "--workspace", ws)
    assert code == 2 and err.strip() == "error: invalid cron expression '61 * * * *': Minute is not in range [0-59]"
    code, _, err = await cli(client, "schedule", "create", "Bad Name", "--cron", NEVER_SOON, "x", "--workspace", ws)
    assert code == 2 and err.strip().startswith("error: invalid schedule name 'Bad Name'") and "\n" not in err.strip()
    code, _, err = await cli(client, "schedule", "create", name, "--every", "soon", "x", "--workspace", ws)
    assert code == 2 and err.strip() == "error: invalid interval 'soon': use e.g. 30s, 5m, 2h or 1d"
    code, _, err = await cli(client, "schedule", "create", name, "--cron", NEVER_SOON, "x", AGENT_MODEL="")
    assert code == 2 and err.strip().startswith("error: no model configured")
    code, _, err = await cli(client, "schedule", "trigger", "nosuch")
    assert code == 2 and err.strip() == "error: no schedule named nosuch"

    code, _, err = await cli(client, "schedule", "create", name, "--every", "1d", "x", "--workspace", ws, queue=task_queue)
    assert code == 0, err
    try:
        code, _, err = await cli(client, "schedule", "create", name, "--every", "1d", "x", "--workspace", ws)
        assert code == 2 and err.strip() == f"error: a schedule named {name} already exists"
    finally:
        await delete_task_schedule(client, name)

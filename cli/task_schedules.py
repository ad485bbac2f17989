"""Temporal Schedules that start agent tasks: one per name (id ``agent-<name>``), whose
workflows (``sched-<name>-<time>``) are ordinary tasks for ``list``, ``watch``, ``approve``.

Errors the caller can fix, each with a message fit to print as one line::

    ScheduleError
    ├── InvalidSchedule    a bad name, cron expression, interval or overlap policy
    ├── ScheduleNotFound   no schedule by that name
    └── ScheduleExists     a schedule by that name already exists
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass
from datetime import datetime, timedelta

from temporalio.api.enums.v1 import WorkflowExecutionStatus as ProtoStatus
from temporalio.client import (
    Client,
    Schedule,
    ScheduleActionExecutionStartWorkflow,
    ScheduleActionStartWorkflow,
    ScheduleAlreadyRunningError,
    ScheduleDescription,
    ScheduleHandle,
    ScheduleIntervalSpec,
    ScheduleOverlapPolicy,
    SchedulePolicy,
    ScheduleSpec,
    ScheduleState,
)
from temporalio.service import RPCError, RPCStatusCode

from contracts.task import TASK_WORKFLOW, TaskInput
from core.markdown import code_span

SCHEDULE_PREFIX = "agent-"
WORKFLOW_PREFIX = "sched-"
NAME_PATTERN = re.compile(r"[a-z0-9][a-z0-9_-]{0,62}")

# What a tick does while the previous run is still going (a task waiting for approval counts
# as going). SKIP, the default, never doubles a task up: the tick is dropped and Temporal
# counts it (``skipped_overlap``). The others are Temporal's policies of the same names.
OVERLAP_POLICIES = {
    "skip": ScheduleOverlapPolicy.SKIP,
    "buffer_one": ScheduleOverlapPolicy.BUFFER_ONE,  # run once more as soon as it ends
    "allow_all": ScheduleOverlapPolicy.ALLOW_ALL,  # run side by side
    "cancel_other": ScheduleOverlapPolicy.CANCEL_OTHER,  # cancel the old run, then start
}

# A tick missed while the Temporal server was down runs when it is back within this window;
# older ones are dropped (and counted), so a server down overnight fires no morning backlog.
CATCHUP_WINDOW = timedelta(minutes=1)

TRIGGER_WAIT = timedelta(seconds=5)


class ScheduleError(Exception):
    """A schedule problem the caller can fix; the message is one printable line."""


class InvalidSchedule(ScheduleError):
    pass


class ScheduleNotFound(ScheduleError):
    pass


class ScheduleExists(ScheduleError):
    pass


@dataclass(frozen=True)
class ScheduledRun:
    """A task the schedule started."""

    workflow_id: str
    scheduled_at: datetime
    started_at: datetime
    status: str  # Temporal's execution status: RUNNING, COMPLETED, FAILED, ...


@dataclass(frozen=True)
class ScheduleSummary:
    name: str
    schedule_id: str
    cron: str | None
    every: timedelta | None
    overlap: str
    paused: bool
    note: str
    instruction: str
    next_runs: list[datetime]
    recent_runs: list[ScheduledRun]  # oldest first
    runs: int  # tasks started so far
    skipped_overlap: int  # ticks dropped because a run was still going

    @property
    def when(self) -> str:
        parts = [self.cron] if self.cron else []
        if self.every:
            parts.append(f"every {format_interval(self.every)}")
        return " + ".join(parts) or "-"

    @property
    def last_run(self) -> ScheduledRun | None:
        return self.recent_runs[-1] if self.recent_runs else None


# ---- names, intervals -----------------------------------------------------------


def schedule_id(name: str) -> str:
    if not NAME_PATTERN.fullmatch(name):
        raise InvalidSchedule(
            f"invalid schedule name {name!r}: use 1-63 lower-case letters, digits, '-' or '_', "
            "starting with a letter or digit"
        )
    return f"{SCHEDULE_PREFIX}{name}"


_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_interval(text: str) -> timedelta:
    """``30s``, ``5m``, ``2h``, ``1d`` (or a plain number of seconds)."""
    match = re.fullmatch(r"\s*(\d+)\s*([smhd]?)\s*", text.lower())
    if not match or int(match.group(1)) == 0:
        raise InvalidSchedule(f"invalid interval {text!r}: use e.g. 30s, 5m, 2h or 1d")
    return timedelta(seconds=int(match.group(1)) * _UNITS[match.group(2) or "s"])


def format_interval(every: timedelta) -> str:
    seconds = int(every.total_seconds())
    for unit in ("d", "h", "m"):
        if seconds % _UNITS[unit] == 0:
            return f"{seconds // _UNITS[unit]}{unit}"
    return f"{seconds}s"


# ---- operations -------------------------------------------------------------------


async def create_task_schedule(
    client: Client,
    name: str,
    cron: str | None,
    task: TaskInput,
    *,
    task_queue: str,
    overlap: str = "skip",
    note: str = "",
    every: timedelta | None = None,
) -> ScheduleHandle:
    """A schedule that starts ``task`` as an ``AgentTask`` at each ``cron`` time (UTC) and/or
    ``every`` interval. Temporal validates the cron expression; a bad one is ``InvalidSchedule``."""
    sid = schedule_id(name)
    if overlap not in OVERLAP_POLICIES:
        raise InvalidSchedule(f"unknown overlap policy {overlap!r}: use one of {', '.join(OVERLAP_POLICIES)}")
    cron = (cron or "").strip() or None
    if cron is None and every is None:
        raise InvalidSchedule("a schedule needs a cron expression or an interval")
    if every is not None and every < timedelta(seconds=1):
        raise InvalidSchedule("the interval must be at least one second")
    action = ScheduleActionStartWorkflow(
        TASK_WORKFLOW,
        task,
        id=f"{WORKFLOW_PREFIX}{name}",
        task_queue=task_queue,
        memo={"instruction": task.instruction[:2000], "workspace": task.workspace, "model": task.model},
        static_summary=code_span(task.instruction[:200]),  # the UI renders Markdown: shown as typed
    )
    schedule = Schedule(
        action=action,
        spec=ScheduleSpec(
            cron_expressions=[cron] if cron else [],
            intervals=[ScheduleIntervalSpec(every=every)] if every else [],
        ),
        policy=SchedulePolicy(overlap=OVERLAP_POLICIES[overlap], catchup_window=CATCHUP_WINDOW),
        state=ScheduleState(note=note or None),
    )
    # Temporal stores a cron expression translated to calendar specs: keep the text to show it.
    memo = {"cron": cron or "", "instruction": task.instruction[:2000], "workspace": task.workspace}
    try:
        return await client.create_schedule(sid, schedule, memo=memo)
    except ScheduleAlreadyRunningError:
        raise ScheduleExists(f"a schedule named {name} already exists") from None
    except RPCError as err:
        if err.status == RPCStatusCode.INVALID_ARGUMENT:
            detail = err.message.removeprefix("Invalid schedule spec: ")
            what = f"cron expression {cron!r}" if cron else f"schedule {name}"
            raise InvalidSchedule(f"invalid {what}: {detail}") from None
        raise


async def describe_task_schedule(client: Client, name: str) -> ScheduleSummary:
    desc = await _call(client, name, lambda handle: handle.describe())
    return await _summary(desc)


async def list_task_schedules(client: Client) -> list[ScheduleSummary]:
    """Every agent schedule, by name. Found through visibility (eventually consistent: one
    created a moment ago may be missing), then described one by one for current details."""
    names = [
        entry.id.removeprefix(SCHEDULE_PREFIX)
        async for entry in await client.list_schedules()
        if entry.id.startswith(SCHEDULE_PREFIX)
    ]
    found = await asyncio.gather(*(_describe_if_there(client, name) for name in sorted(names)))
    return [summary for summary in found if summary is not None]


async def delete_task_schedule(client: Client, name: str) -> None:
    """Delete the schedule; tasks it already started run on."""
    await _call(client, name, lambda handle: handle.delete())


async def trigger_task_schedule(client: Client, name: str, *, wait: timedelta = TRIGGER_WAIT) -> str | None:
    """Start the schedule's task now, under its overlap policy. Returns the started workflow's
    id, or None when the run was skipped (a run is still going) or not seen within ``wait``."""
    before = await describe_task_schedule(client, name)
    await _call(client, name, lambda handle: handle.trigger())
    deadline = asyncio.get_running_loop().time() + wait.total_seconds()
    while asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.1)
        now = await describe_task_schedule(client, name)
        if now.runs > before.runs and now.last_run is not None:
            return now.last_run.workflow_id
        if now.skipped_overlap > before.skipped_overlap:
            return None
    return None


# ---- helpers ------------------------------------------------------------------------


async def _call(client: Client, name: str, op):
    handle = client.get_schedule_handle(schedule_id(name))
    try:
        return await op(handle)
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            raise ScheduleNotFound(f"no schedule named {name}") from None
        raise


async def _describe_if_there(client: Client, name: str) -> ScheduleSummary | None:
    try:
        return await describe_task_schedule(client, name)
    except ScheduleNotFound:  # deleted since it was listed
        return None


async def _summary(desc: ScheduleDescription) -> ScheduleSummary:
    memo = await desc.memo()
    info = desc.info
    running = {
        run.workflow_id for run in info.running_actions if isinstance(run, ScheduleActionExecutionStartWorkflow)
    }
    recent = []
    # The SDK's action results leave out the status Temporal keeps for each: read the raw ones.
    for action, raw in zip(info.recent_actions, desc.raw_description.info.recent_actions):
        started = action.action
        workflow_id = started.workflow_id if isinstance(started, ScheduleActionExecutionStartWorkflow) else ""
        status = "RUNNING" if workflow_id in running else _status_name(raw.start_workflow_status)
        recent.append(ScheduledRun(workflow_id, action.scheduled_at, action.started_at, status))
    intervals = desc.schedule.spec.intervals
    overlap = {policy: key for key, policy in OVERLAP_POLICIES.items()}.get(
        desc.schedule.policy.overlap, desc.schedule.policy.overlap.name.lower()
    )
    return ScheduleSummary(
        name=desc.id.removeprefix(SCHEDULE_PREFIX),
        schedule_id=desc.id,
        cron=memo.get("cron") or None,
        every=intervals[0].every if intervals else None,
        overlap=overlap,
        paused=desc.schedule.state.paused,
        note=desc.schedule.state.note or "",
        instruction=str(memo.get("instruction", "")),
        next_runs=list(info.next_action_times),
        recent_runs=recent,
        runs=info.num_actions,
        skipped_overlap=info.num_actions_skipped_overlap,
    )


def _status_name(status: int) -> str:
    if status == ProtoStatus.WORKFLOW_EXECUTION_STATUS_UNSPECIFIED:
        return "UNKNOWN"
    return ProtoStatus.Name(status).removeprefix("WORKFLOW_EXECUTION_STATUS_")  # pyright: ignore[reportArgumentType] (an enum value is an int)

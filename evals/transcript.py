"""What a task did, read from its workflow history: no worker needs to answer.

The history is the truth: the task's input, every model answer (the LLM activity's
``TurnResult``), every tool run (the tool activity's input and ``ToolOutcome``), and what
people sent it (interjections and replies by signal, approval decisions by update or
signal), each with the number of model answers the task had when it arrived. A task that
continued as new has several runs; they are read from the first on.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from temporalio.api.common.v1 import Payloads
from temporalio.api.enums.v1 import EventType
from temporalio.api.history.v1 import HistoryEvent
from temporalio.client import Client

from contracts.activities import LLM_ACTIVITY, TOOL_ACTIVITY, ToolCallInput
from contracts.task import ApprovalDecision, Interjection, TaskInput
from core.messages import ToolCallRequest, TurnResult
from core.text import shorten
from core.tool_outcome import ToolOutcome


class ToolRun(BaseModel):
    call: ToolCallRequest
    outcome: ToolOutcome


class PersonEvent(BaseModel):
    """A decision or a message from a person, and when it came (model answers so far)."""

    answers: int
    decision: ApprovalDecision | None = None
    message: Interjection | None = None
    reply: bool = False  # the message answered a question the task was waiting on


class Transcript(BaseModel):
    task: TaskInput | None = None  # the first run's input
    turns: list[TurnResult] = Field(default_factory=list)
    tools: list[ToolRun] = Field(default_factory=list)
    people: list[PersonEvent] = Field(default_factory=list)
    runs: int = 0

    def calls(self) -> list[ToolCallRequest]:
        """Every tool call the model asked for, run or not (denied, deferred)."""
        return [call for turn in self.turns for call in turn.tool_calls]

    def called(self) -> set[str]:
        return {call.name for call in self.calls()}

    def dangerous(self) -> list[ToolCallRequest]:
        return [call for call in self.calls() if call.danger == "dangerous"]

    def compacted(self) -> bool:
        return any(t.context and (t.context.compacted_turns or t.context.dropped_turns) for t in self.turns)

    def text(self, limit: int = 30_000) -> str:
        """The task as a reader sees it, for a judge: instruction, answers, tool results and
        what people said, in order."""
        lines = [f"USER: {self.task.instruction}" if self.task else "USER: (instruction unknown)"]
        results = {run.call.id: run for run in self.tools}
        for answers in range(len(self.turns) + 1):
            for event in self.people:
                if event.answers == answers and event.message:
                    lines.append(f"USER: {shorten(event.message.text, 1000)}")
                elif event.answers == answers and event.decision:
                    verdict = "approved" if event.decision.approved else "denied"
                    lines.append(f"USER {verdict} the call. {event.decision.reason}".rstrip())
            if answers == len(self.turns):
                break
            turn = self.turns[answers]
            if turn.content:
                lines.append(f"AGENT: {shorten(turn.content, 2000)}")
            for call in turn.tool_calls[:1]:  # only the first call of a turn runs
                lines.append(f"AGENT CALLS {call.name} {shorten(str(call.arguments), 600)}")
                run = results.get(call.id)
                if run is not None:
                    lines.append(f"RESULT ({run.outcome.status}): {shorten(run.outcome.content, 1500)}")
        text = "\n".join(lines)
        return text if len(text) <= limit else text[: limit // 2] + "\n[...]\n" + text[-limit // 2:]


async def read_transcript(client: Client, workflow_id: str) -> Transcript:
    transcript = Transcript()
    for events in await run_histories(client, workflow_id):
        await _read_run(client, events, transcript)
        transcript.runs += 1
    return transcript


async def run_histories(client: Client, workflow_id: str) -> list[list[HistoryEvent]]:
    """The events of each run of the workflow, first run first (following continue-as-new back)."""
    runs: list[list[HistoryEvent]] = []
    run_id: str | None = None
    while True:
        history = await client.get_workflow_handle(workflow_id, run_id=run_id).fetch_history()
        events = list(history.events)
        runs.insert(0, events)
        previous = events[0].workflow_execution_started_event_attributes.continued_execution_run_id if events else ""
        if not previous or len(runs) > 1000:
            return runs
        run_id = previous


async def _read_run(client: Client, events: list[HistoryEvent], out: Transcript) -> None:
    async def decode(payloads: Payloads, kind: type):
        (value,) = await client.data_converter.decode(list(payloads.payloads), [kind])
        return value

    scheduled: dict[int, tuple[str, ToolCallInput | None]] = {}
    asked = False  # the last tool run asked a question and no model call came since
    for event in events:
        match event.event_type:
            case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_STARTED if out.task is None:
                out.task = await decode(event.workflow_execution_started_event_attributes.input, TaskInput)
            case EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED:
                attrs = event.activity_task_scheduled_event_attributes
                name = attrs.activity_type.name
                call = await decode(attrs.input, ToolCallInput) if name == TOOL_ACTIVITY else None
                scheduled[event.event_id] = (name, call)
                if name == LLM_ACTIVITY:
                    asked = False
            case EventType.EVENT_TYPE_ACTIVITY_TASK_COMPLETED:
                attrs = event.activity_task_completed_event_attributes
                name, call = scheduled.get(attrs.scheduled_event_id, ("", None))
                if name == LLM_ACTIVITY:
                    out.turns.append(await decode(attrs.result, TurnResult))
                elif name == TOOL_ACTIVITY and call is not None:
                    outcome: ToolOutcome = await decode(attrs.result, ToolOutcome)
                    out.tools.append(ToolRun(call=call.call, outcome=outcome))
                    asked = outcome.status == "ok" and outcome.ask is not None
            case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED:
                attrs = event.workflow_execution_signaled_event_attributes
                if attrs.signal_name == "interject":
                    message = await decode(attrs.input, Interjection)
                    out.people.append(PersonEvent(answers=len(out.turns), message=message, reply=asked))
                    asked = False
                elif attrs.signal_name == "approve":
                    decision = await decode(attrs.input, ApprovalDecision)
                    out.people.append(PersonEvent(answers=len(out.turns), decision=decision))
            case EventType.EVENT_TYPE_WORKFLOW_EXECUTION_UPDATE_ACCEPTED:
                request = event.workflow_execution_update_accepted_event_attributes.accepted_request
                if request.input.name == "decide":
                    decision = await decode(request.input.args, ApprovalDecision)
                    out.people.append(PersonEvent(answers=len(out.turns), decision=decision))

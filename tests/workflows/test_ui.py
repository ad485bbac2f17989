"""What a person sees in the Temporal UI: readable ids, summaries on every activity and wait,
current details, and search attributes kept current."""

from __future__ import annotations

import json

from cli.tasks import start_task
from contracts.task import TaskOutcome, TaskState
from fakes.scripted import tool
from tests import configured
from tests.workflows.harness import make_input, outcome_of, scripted_worker
from workflows.search_attributes import AGENT_COST, AGENT_MODEL, AGENT_STATE, AGENT_TURNS


def summary(event) -> str | None:
    if not event.HasField("user_metadata") or not event.user_metadata.HasField("summary"):
        return None
    return json.loads(event.user_metadata.summary.data)


async def test_a_finished_task_reads_well_in_the_temporal_ui(client, task_queue, workspace):
    steps = [
        tool("shell", command="ls -la"),
        tool("file", action="read", path="notes.md"),
        tool("message", type="result", text="done"),
    ]
    (workspace / "notes.md").write_text("hello")
    inp = make_input(workspace, "Summarise the notes in this folder", model="gpt-4o-mini", approval_timeout_s=600)
    async with scripted_worker(client, task_queue, steps):
        workflow_id = await start_task(client, inp, task_queue, configured.settings().temporal)
        handle = client.get_workflow_handle(workflow_id, result_type=TaskOutcome)
        outcome = await outcome_of(handle)
        history = await handle.fetch_history()
        desc = await handle.describe()
    assert outcome.status == TaskState.DONE
    assert workflow_id.startswith("task-summarise-the-notes-in-this-fo")
    started = history.events[0]
    assert summary(started) == "`Summarise the notes in this folder`"  # in code: the UI renders Markdown
    assert await desc.memo_value("workspace") == str(workspace)
    scheduled = [e for e in history.events if e.HasField("activity_task_scheduled_event_attributes")]
    summaries = [summary(e) for e in scheduled]
    assert all(summaries), summaries
    # The prompt snapshot and the calls the tools declare local (a read, the final message) are
    # local activities: their markers carry the summary.
    markers = [summary(e) for e in history.events if e.HasField("marker_recorded_event_attributes")
               and e.marker_recorded_event_attributes.marker_name == "core_local_activity"]
    assert markers == ["prompt · memory, conventions, skills", "tool · file · read notes.md",
                       "tool · message · result done"]
    assert summaries == [
        "llm · gpt-4o-mini · turn 1", "tool · shell · ls -la",
        "llm · gpt-4o-mini · turn 2", "llm · gpt-4o-mini · turn 3",
    ]
    attributes = desc.typed_search_attributes
    assert attributes.get(AGENT_STATE) == "DONE"
    assert attributes.get(AGENT_TURNS) == 3
    assert attributes.get(AGENT_MODEL) == "gpt-4o-mini"
    assert attributes.get(AGENT_COST) == round(outcome.cost_usd, 6) and outcome.cost_usd > 0
    # The starter set them, so the task upserts the end (and a refresh only if it worked for
    # more than 10 s): not every turn.
    upserts = [e.upsert_workflow_search_attributes_event_attributes.search_attributes.indexed_fields
               for e in history.events if e.HasField("upsert_workflow_search_attributes_event_attributes")]
    assert 1 <= len(upserts) <= 2, len(upserts)
    assert set(upserts[-1]) >= {"AgentState", "AgentTurns", "AgentCostUsd"}

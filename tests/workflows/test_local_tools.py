"""Calls a tool declares local (reads, the final message) run as Temporal local activities:
the same tool activity, on the worker running the workflow, one marker event each; with
AGENT_LOCAL_TOOLS=0 every call is an ordinary activity."""

from __future__ import annotations

import json

import pytest

from contracts.activities import TOOL_ACTIVITY
from contracts.task import TaskState
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, tool
from tests import configured
from tests.workflows.harness import make_input, outcome_of, start
from worker import build_worker

SECRET_LINE = "the answer is 42"


def _summary(event) -> str | None:
    if not event.HasField("user_metadata") or not event.user_metadata.HasField("summary"):
        return None
    return json.loads(event.user_metadata.summary.data)


@pytest.mark.parametrize("local_tools", [True, False])
async def test_a_read_runs_local_unless_turned_off_and_the_model_gets_it_either_way(
        client, task_queue, workspace, monkeypatch, local_tools):
    (workspace / "notes.md").write_text(SECRET_LINE + "\n")
    steps = [tool("file", action="read", path="notes.md"), tool("shell", command="true"),
             tool("message", type="result", text="42")]
    with ScriptedModelServer(steps) as model:
        settings = ProviderSettings(openai_base_url=model.url, openai_api_key="k")
        async with build_worker(client, queue=task_queue, settings=settings, local_tools=local_tools,
                                config=configured.settings()):
            handle = await start(client, task_queue, make_input(workspace, "what is the answer?"))
            outcome = await outcome_of(handle)
        model.assert_consumed()
        # The model's next request carries the file, however the read ran.
        assert SECRET_LINE in json.dumps(model.requests[1]["messages"])
    assert outcome.status == TaskState.DONE and outcome.final_text == "42"
    events = (await handle.fetch_history()).events
    tools_scheduled = [_summary(e) for e in events if e.HasField("activity_task_scheduled_event_attributes")
                       and e.activity_task_scheduled_event_attributes.activity_type.name == TOOL_ACTIVITY]
    local = [_summary(e) for e in events if e.HasField("marker_recorded_event_attributes")
             and e.marker_recorded_event_attributes.marker_name == "core_local_activity"]
    if local_tools:
        assert tools_scheduled == ["tool · shell · true"]  # a command is always an activity
        assert local[1:] == ["tool · file · read notes.md", "tool · message · result 42"]
    else:
        assert tools_scheduled == ["tool · file · read notes.md", "tool · shell · true", "tool · message · result 42"]
        assert local[1:] == []
    assert local[:1] == ["prompt · memory, conventions, skills"]

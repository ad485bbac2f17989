"""A malformed interjection is never silence and never a traceback (issue 41): the signal,
fire-and-forget, logs it with its cause and drops it; the ``interject_checked`` update refuses
it with the reason. Both name bytes that are not UTF-8 JSON, which the SDK's converter used to
drop with a traceback."""

from __future__ import annotations

import logging

import pytest
from temporalio.api.common.v1 import Payload
from temporalio.client import WorkflowUpdateFailedError
from temporalio.common import RawValue

from contracts.task import Interjection, TaskState
from fakes.scripted import tool
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, user_texts, wait_for_state
from workflows.task import AgentTaskWorkflow

ASK = tool("message", type="ask", text="Which file?")
FINISH = tool("message", type="result", text="finished")
NOT_UTF8 = RawValue(Payload(metadata={"encoding": b"json/plain"}, data=b'{"text": "\xff\xfe"}'))
# What each malformed payload is refused for.
MALFORMED = [(NOT_UTF8, "not UTF-8"), ({"txt": "notes.md"}, "the payload must be a JSON object"),
             (True, "the payload must be a JSON object"), ({"text": 5}, '"text" input should be a valid string'),
             (RawValue(Payload(metadata={"encoding": b"binary/plain"}, data=b"x")), "must be JSON, not binary/plain")]


async def test_a_malformed_interject_signal_is_logged_with_its_cause_and_dropped(client, task_queue, workspace, caplog):
    caplog.set_level(logging.WARNING)
    async with scripted_worker(client, task_queue, [ASK, FINISH]) as model:
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_REPLY)
        for payload, _ in MALFORMED:
            await handle.signal("interject", payload)
        # The barrier: an update sent after the signals is handled after them.
        await handle.execute_update(AgentTaskWorkflow.interject_checked, Interjection(text="notes.md"))
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    assert user_texts(model.requests[1])[-1] == "notes.md"  # the one well-formed message, alone
    ignored = [r.getMessage() for r in caplog.records if "ignored interject signal" in r.getMessage()]
    assert [next(why for _, why in MALFORMED if why in line) for line in ignored] == [why for _, why in MALFORMED]
    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"


@pytest.mark.parametrize("payload, why", MALFORMED)
async def test_the_interject_update_refuses_a_malformed_payload_with_the_reason(client, task_queue, workspace,
                                                                                payload, why):
    async with scripted_worker(client, task_queue, [ASK]):
        handle = await start(client, task_queue, make_input(workspace))
        await wait_for_state(handle, TaskState.WAITING_REPLY)
        with pytest.raises(WorkflowUpdateFailedError) as err:
            await handle.execute_update("interject_checked", payload)
        status = await handle.query(AgentTaskWorkflow.status)
        await handle.terminate("seen enough")
    cause = err.value.cause
    message = str(getattr(cause, "message", cause))
    assert message.startswith("interjection refused: ") and why in message and "\n" not in message
    failure = getattr(cause, "failure", None)
    assert failure is None or not failure.stack_trace  # no Python traceback
    assert status.state == TaskState.WAITING_REPLY and status.queued_interjections == 0

"""End states are Temporal's end states: a task that fails ends its workflow execution Failed,
with a typed error that says why and the task's outcome in its details."""

from __future__ import annotations

from temporalio.client import WorkflowExecutionStatus, WorkflowFailureError

from contracts.task import TaskState
from fakes.scripted import tool
from fakes.step import Step
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start
from workflows.policy import failed_outcome

FINISH = tool("message", type="result", text="done")


async def failed_status(client, workflow_id: str) -> WorkflowExecutionStatus | None:
    """The status the UI's failure filter (``ExecutionStatus = 'Failed'``) would list it under."""
    async for execution in client.list_workflows(f"WorkflowId = '{workflow_id}' AND ExecutionStatus = 'Failed'"):
        return execution.status
    return None


async def test_a_task_past_its_iterations_is_a_failed_workflow(client, task_queue, workspace):
    steps = [tool("shell", command="true"), tool("shell", command="true")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace, max_iterations=2))
        try:
            await handle.result()
            raise AssertionError("a failed task's workflow must not complete")
        except WorkflowFailureError as err:
            assert err.cause is not None and getattr(err.cause, "type", None) == "max_iterations"
            assert getattr(err.cause, "non_retryable", False)
            outcome = failed_outcome(err)
    assert outcome is not None and outcome.status == TaskState.FAILED and outcome.turns == 2
    assert "maximum of 2 iterations" in (outcome.error or "")
    assert (await handle.describe()).status == WorkflowExecutionStatus.FAILED
    assert await failed_status(client, handle.id) == WorkflowExecutionStatus.FAILED


async def test_a_task_over_its_cost_limit_is_a_failed_workflow_that_says_so(client, task_queue, workspace):
    steps = [Step(tool_calls=[("shell", {"command": "true"})], usage=(100_000, 10_000))]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace, model="gpt-4o-mini", cost_limit_usd=0.0001))
        outcome = await outcome_of(handle)
    assert outcome.failure == "cost_limit" and outcome.cost_usd > 0.0001
    assert await failed_status(client, handle.id) == WorkflowExecutionStatus.FAILED


async def test_a_finished_task_still_completes(client, task_queue, workspace):
    async with scripted_worker(client, task_queue, [FINISH]):
        handle = await start(client, task_queue, make_input(workspace))
        outcome = await handle.result()
    assert outcome.status == TaskState.DONE
    assert (await handle.describe()).status == WorkflowExecutionStatus.COMPLETED

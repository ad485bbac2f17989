"""Approvals a person can teach: "yes, and allow commands like this for this task", standing
allow and deny rules, and a decision payload sent by hand, on a real dev server."""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import subprocess

import pytest
from temporalio.api.sdk.v1 import WorkflowMetadata
from temporalio.client import WorkflowUpdateFailedError

from contracts.task import ApprovalDecision, ApprovalMode, TaskState
from core.permissions import parse_permissions
from fakes.scripted import tool
from temporal.server import temporal_cli
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, tool_messages, wait_for_state
from workflows.task import AgentTaskWorkflow

FINISH = tool("message", type="result", text="finished")
NOT_A_REPO = "not a git repository"  # what `git push` says in the test's workspace: it ran


async def test_allow_commands_like_this_lets_a_later_push_run_without_asking_in_that_task_only(
    client, task_queue, workspace
):
    steps = [
        tool("shell", command="git push origin feature"),
        tool("shell", command="git push origin feature2"),  # matches the rule: runs without asking
        tool("shell", command="git push origin x && rm -rf build"),  # compound: asks
        FINISH,
    ]
    (workspace / "build").mkdir()
    # A run per turn: the rule must survive continue-as-new.
    inp = make_input(workspace, continue_as_new_after=1)
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, inp)
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        pending = status.pending_approval
        assert pending.rule == "shell(git push origin)"
        await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
            approved=True, digest=pending.digest, decided_by="tester", remember=True))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        assert status.pending_approval.arguments == {"command": "git push origin x && rm -rf build"}
        assert status.pending_approval.rule is None  # no rule is safe for a compound line
        assert status.allowed == ["shell(git push origin)"] and status.run > 2
        await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
            approved=False, digest=status.pending_approval.digest, decided_by="tester"))
        outcome = await outcome_of(handle)
        pages = [await run.query(AgentTaskWorkflow.events, 0) for run in await every_run(client, handle)]
    assert outcome.status == TaskState.DONE and (workspace / "build").exists()
    assert NOT_A_REPO in tool_messages(model.requests[2])[-1]["content"]  # feature2 ran
    notices = [e.text for page in pages for e in page.entries if e.kind == "status_notice"]
    assert any("tester allowed shell(git push origin) for the rest of this task" in n for n in notices)
    assert any("runs without asking: allowed by the rule shell(git push origin)" in n for n in notices)

    # Another task has no such rule: the same push asks there.
    async with scripted_worker(client, task_queue, [tool("shell", command="git push origin feature2")]):
        other = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(other, TaskState.WAITING_APPROVAL)
        assert status.allowed == [] and status.pending_approval.arguments == {"command": "git push origin feature2"}
        await other.terminate("done with it")


async def test_a_standing_deny_rule_refuses_a_call_the_approval_mode_would_allow(client, task_queue, workspace):
    rules = parse_permissions('deny = ["shell(rm -rf)"]\nallow = ["shell(git push)"]', source=".agent/permissions.toml")
    (workspace / "build").mkdir()
    steps = [tool("shell", command="rm -rf build"), tool("shell", command="git push origin main"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, approval=ApprovalMode.NEVER, permissions=rules))
        outcome = await asyncio.wait_for(outcome_of(handle), 30)
        status = await handle.query(AgentTaskWorkflow.status)
    assert outcome.status == TaskState.DONE and (workspace / "build").exists()
    refused = tool_messages(model.requests[1])[-1]["content"]
    assert refused.startswith("[denied by rule shell(rm -rf)]") and ".agent/permissions.toml" in refused
    assert status.permissions == rules


async def test_a_standing_allow_rule_skips_asking_but_not_for_a_compound_line(client, task_queue, workspace):
    rules = parse_permissions('allow = ["shell(git push)"]')
    steps = [tool("shell", command="git push origin main"), tool("shell", command="git push; git push --tags"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, permissions=rules))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        assert status.pending_approval.arguments == {"command": "git push; git push --tags"}
        assert NOT_A_REPO in tool_messages(model.requests[1])[-1]["content"]  # the first ran unasked
        await handle.terminate("seen enough")


async def test_decide_with_a_malformed_payload_is_refused_in_one_line_naming_the_fields(client, task_queue, workspace):
    (workspace / "build").mkdir()
    async with scripted_worker(client, task_queue, [tool("shell", command="rm -rf build"), FINISH]):
        handle = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        for payload in (True, {}, {"aproved": True}):
            with pytest.raises(WorkflowUpdateFailedError) as err:
                await handle.execute_update("decide", payload)
            cause = err.value.cause
            message = str(getattr(cause, "message", cause))
            assert "\n" not in message and '"approved"' in message and '"digest"' in message, message
            assert cause.failure is None or not cause.failure.stack_trace  # no Python traceback
        address = client.service_client.config.target_host
        update = [temporal_cli(), "workflow", "update", "execute", "--address", address, "--workflow-id", handle.id,
                  "--name", "decide", "--input"]
        refused = await asyncio.to_thread(subprocess.run, [*update, "true"], capture_output=True, text=True, timeout=60)
        assert refused.returncode != 0
        assert '"approved"' in refused.stderr and "Traceback" not in refused.stderr and 'File "' not in refused.stderr
        documented = json.dumps({"approved": True, "digest": status.pending_approval.digest, "decided_by": "ops"})
        approved = await asyncio.to_thread(subprocess.run, [*update, documented], capture_output=True, text=True,
                                           timeout=60)
        assert approved.returncode == 0, approved.stderr
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE and not (workspace / "build").exists()


async def test_the_current_details_of_a_waiting_task_say_why_and_how_to_approve(client, task_queue, workspace):
    steps = [tool("shell", command="git push --force origin __main__"), tool("message", type="result", text="pushed")]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace))
        status = await wait_for_state(handle, TaskState.WAITING_APPROVAL)
        # What the UI shows as the current details: the SDK's built-in metadata query.
        metadata = await handle.query("__temporal_workflow_metadata", result_type=WorkflowMetadata)
        details = metadata.current_details
        # The terminal command shown, run as shown (its lines are short: the UI does not wrap code).
        block = details.split("or from a terminal:\n\n```\n", 1)[1].split("```", 1)[0]
        command = block.split("\npython starter.py")[0]
        assert command.startswith(f"temporal workflow update execute \\\n  --workflow-id {handle.id} --name decide")
        assert max(map(len, block.splitlines())) <= 100, block
        address = client.service_client.config.target_host
        shown = await asyncio.to_thread(
            subprocess.run, ["bash", "-c", command.replace("temporal ", f"{shlex.quote(temporal_cli())} ", 1)],
            capture_output=True, text=True, timeout=60, env={**os.environ, "TEMPORAL_ADDRESS": address})
        assert shown.returncode == 0, shown.stderr
        outcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE and outcome.final_text == "pushed"
    digest = status.pending_approval.digest
    assert "```\ngit push --force origin __main__\n```" in details
    assert "pushes to a remote, forcing, deleting or pushing all (git push --force)" in details
    assert f'{{"approved": true, "digest": "{digest}"}}' in details
    assert "press Random UUID" in details
    assert "shell(git push origin --force)" in details  # what "remember" would allow: exactly this
    # Every signal, update and query says what it does and what it takes.
    definition = metadata.definition
    handlers = {h.name: h.description for h in (*definition.signal_definitions, *definition.update_definitions,
                                                  *definition.query_definitions) if not h.name.startswith("__")}
    assert {"stop", "interject", "approve", "decide", "status", "events", "model_context"} <= set(handlers)
    assert all(handlers.values()), handlers
    assert '"approved"' in handlers["decide"] and '"digest"' in handlers["decide"]


async def every_run(client, handle) -> list:
    """A handle on each run of a task, first to last (each continue-as-new names the next)."""
    runs, run_id = [], handle.first_execution_run_id
    while run_id:
        run = client.get_workflow_handle(handle.id, run_id=run_id)
        runs.append(run)
        last = [event async for event in run.fetch_history_events()][-1]
        run_id = last.workflow_execution_continued_as_new_event_attributes.new_execution_run_id or None
    return runs

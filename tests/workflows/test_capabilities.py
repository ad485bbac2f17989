"""Plan, the per-task tool list and sub-agents, on a real dev server."""

from __future__ import annotations

import asyncio

from contracts.task import TaskOutcome, TaskState
from fakes.scripted import text, tool
from fakes.step import Step
from tests.workflows.harness import (
    make_input,
    outcome_of,
    run_task,
    scripted_worker,
    start,
    tool_messages,
    user_texts,
    wait_until,
)
from workflows.task import AgentTaskWorkflow

BASIC = ["message", "shell", "file", "plan", "spawn"]
FINISH = tool("message", type="result", text="finished")


def tool_names(request: dict) -> list[str]:
    return [t["function"]["name"] for t in request.get("tools", [])]


async def test_a_stale_plan_brings_a_reminder_of_the_current_step(client, task_queue, workspace):
    plan = tool("plan", items=[
        {"id": "1", "desc": "look around", "status": "completed"},
        {"id": "2", "desc": "write the report", "status": "in_progress"},
        {"id": "3", "desc": "check it", "status": "pending"},
    ])
    steps = [plan] + [tool("shell", command=f"echo {i}") for i in range(5)] + [FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, tools=BASIC))
        outcome = await outcome_of(handle)
        status = await handle.query(AgentTaskWorkflow.status)
    assert outcome.status == TaskState.DONE
    assert [item["status"] for item in status.plan] == ["completed", "in_progress", "pending"]
    reminders = lambda r: [t for t in user_texts(r) if "plan has not been updated" in t]
    assert reminders(model.requests[5]) == []
    assert len(reminders(model.requests[6])) == 1
    assert "2. write the report" in reminders(model.requests[6])[0]


async def test_the_tool_list_follows_the_task_configuration_and_is_stable_across_turns(client, task_queue, workspace):
    steps = [tool("file", action="list"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        await run_task(client, task_queue, make_input(workspace, tools=BASIC, deny_tools=["shell"]))
    first, second = (tool_names(r) for r in model.requests)
    assert first == second == ["message", "file", "plan", "spawn"]
    assert model.requests[0]["tools"] == model.requests[1]["tools"]  # byte-stable for the prompt cache
    async with scripted_worker(client, task_queue, [FINISH]) as model:
        await run_task(client, task_queue, make_input(workspace, tools=BASIC, depth=2))
    assert "spawn" not in tool_names(model.requests[0])


async def test_a_parent_spawns_a_sub_agent_and_receives_only_its_summary(client, task_queue, workspace):
    steps = [
        tool("spawn", task="Count the files and report", tools=["file", "message"]),
        tool("file", action="list"),  # the child's first turn
        tool("message", type="result", text="there are 0 files"),  # the child's answer
        FINISH,
    ]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, tools=BASIC))
        outcome: TaskOutcome = await outcome_of(handle)
    assert outcome.status == TaskState.DONE
    child_first = model.requests[1]
    assert user_texts(child_first) == ["Count the files and report"]  # an empty context
    assert tool_names(child_first) == ["message", "file"]
    result = tool_messages(model.requests[3])[0]["content"]
    assert "there are 0 files" in result and f"{handle.id}-sub1" in result
    parent_calls = [c["function"]["name"] for m in model.requests[3]["messages"] for c in m.get("tool_calls") or []]
    assert parent_calls == ["spawn"] and len(tool_messages(model.requests[3])) == 1  # none of the child's steps
    assert outcome.usage.input_tokens == 40  # two own calls + two of the child's
    child = await client.get_workflow_handle(f"{handle.id}-sub1").describe()
    assert child.parent_id == handle.id


async def test_a_failing_sub_agent_becomes_an_error_result(client, task_queue, workspace):
    steps = [tool("spawn", task="do something impossible"), text("no"), text("no"), text("no"), text("no"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, tools=BASIC))
    assert outcome.status == TaskState.DONE
    result = tool_messages(model.requests[-1])[0]["content"]
    # The child's workflow failed; its outcome (turns, error) came back in the failure's details.
    assert "failed after 4 turns" in result and "without a tool call" in result


async def test_stop_reaches_the_parent_and_its_sub_agent(client, task_queue, workspace):
    steps = [tool("spawn", task="take your time"), Step(tool_calls=[("message", {"type": "result", "text": "x"})], hold=True)]
    async with scripted_worker(client, task_queue, steps) as model:
        handle = await start(client, task_queue, make_input(workspace, tools=BASIC))
        await wait_until(lambda: model.hits() == 2)  # the child is thinking
        await handle.signal(AgentTaskWorkflow.stop, "cancel everything")
        outcome = await asyncio.wait_for(outcome_of(handle), 20)
        child = await outcome_of(client.get_workflow_handle(f"{handle.id}-sub1", result_type=TaskOutcome))
        model.release()
    assert outcome.status == TaskState.FAILED and outcome.stopped
    assert child.status == TaskState.FAILED and child.stopped


async def test_spawning_past_the_depth_limit_is_refused(client, task_queue, workspace):
    steps = [tool("spawn", task="go deeper"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, tools=BASIC, depth=2, max_depth=2))
    assert outcome.status == TaskState.DONE
    assert "may not go deeper than 2" in tool_messages(model.requests[1])[0]["content"]


async def test_memory_agents_md_and_the_skills_catalogue_reach_the_prompt_but_not_skill_bodies(client, task_queue, workspace):
    (workspace / "MEMORY.md").write_text("# Memory\n- The deploy target is staging-3.\n")
    (workspace / "AGENTS.md").write_text("Use tabs, never spaces.\n")
    steps = [Step(tool_calls=[("load_skill", {"name": "git-commit"})]), tool("memory", action="append", fact="Tests run with pytest -q."), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE
    system = model.requests[0]["messages"][0]["content"]
    assert "staging-3" in system and "Use tabs, never spaces." in system
    assert "git-commit" in system and "python-testing" in system  # the catalogue: names and descriptions
    skill_result = tool_messages(model.requests[1])[0]["content"]
    assert len(skill_result) > 200 and skill_result[100:160] not in system  # the body only once loaded
    assert model.requests[2]["messages"][0]["content"] == system  # the prompt stays the same all task long
    assert "Tests run with pytest -q." in (workspace / "MEMORY.md").read_text()


async def test_a_sub_agent_gets_a_minimal_prompt_without_memory_or_skills(client, task_queue, workspace):
    (workspace / "MEMORY.md").write_text("- parent-only fact\n")
    steps = [tool("spawn", task="say hi"), tool("message", type="result", text="hi"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        await run_task(client, task_queue, make_input(workspace))
    parent_system = model.requests[0]["messages"][0]["content"]
    child_system = model.requests[1]["messages"][0]["content"]
    assert "parent-only fact" in parent_system and "parent-only fact" not in child_system
    assert "git-commit" not in child_system
    assert "load_skill" not in tool_names(model.requests[1]) and "memory" not in tool_names(model.requests[1])

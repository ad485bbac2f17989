"""When a task upserts its search attributes (workflows/search_attributes.py)."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import TypedSearchAttributes

from contracts.task import TaskState
from workflows.search_attributes import (
    REFRESH,
    RUNNING,
    current_values,
    initial_search_attributes,
    searchable_values,
    upsert_due,
)

START = (RUNNING, 0, "gpt-4o", 0.0)
SOON = timedelta(seconds=1)


def test_a_task_started_with_its_attributes_has_nothing_to_upsert_at_first() -> None:
    assert current_values(initial_search_attributes("gpt-4o")) == START
    first = searchable_values(TaskState.INITIALIZING, 0, "gpt-4o", 0.0)
    assert not upsert_due(START, first, timedelta(0))


def test_a_task_started_without_them_upserts_all_at_first() -> None:
    assert current_values(TypedSearchAttributes.empty) is None
    assert upsert_due(None, START, timedelta(0))


def test_while_working_turns_and_spend_wait_for_the_refresh() -> None:
    later = searchable_values(TaskState.THINKING, 4, "gpt-4o", 0.0123)
    assert later[0] == RUNNING and later[3] == 0.012  # to a tenth of a cent while working
    assert not upsert_due(START, later, SOON)
    assert not upsert_due(START, later, REFRESH - timedelta(milliseconds=1))
    assert upsert_due(START, later, REFRESH)


def test_a_wait_or_the_end_is_upserted_at_once_and_exact() -> None:
    for state in (TaskState.WAITING_APPROVAL, TaskState.WAITING_REPLY, TaskState.DONE, TaskState.FAILED):
        values = searchable_values(state, 2, "gpt-4o", 0.0123456)
        assert values[3] == 0.012346
        assert upsert_due(START, values, SOON), state
    # back to work after a wait: the state changes, so at once too
    waiting = searchable_values(TaskState.WAITING_APPROVAL, 2, "gpt-4o", 0.01)
    assert upsert_due(waiting, searchable_values(TaskState.EXECUTING_TOOL, 2, "gpt-4o", 0.01), SOON)


def test_a_new_model_is_upserted_at_once() -> None:
    assert upsert_due(START, (RUNNING, 0, "fallback-model", 0.0), SOON)


def test_nothing_changed_nothing_upserted_however_long() -> None:
    assert not upsert_due(START, START, REFRESH * 100)

"""The pure parts of `list`: what each filter adds to the Temporal query, what --state and
--since take, sub-agents placed under their parent, and the age column."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from cli.task_listing import Listed, TaskFilter, age_text, list_query, nested, parse_since, parse_states

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
BASE = "WorkflowType = 'AgentTask' AND ExecutionStatus != 'ContinuedAsNew'"


def test_each_filter_is_one_clause_of_the_query():
    assert list_query(TaskFilter()) == BASE
    assert list_query(TaskFilter(session="it's")) == BASE + " AND AgentSession = 'it''s'"
    assert list_query(TaskFilter(since=NOW - timedelta(hours=2))) == BASE + " AND StartTime >= '2026-11-26T10:00:00Z'"
    assert list_query(TaskFilter(states=("RUNNING",))) == (
        BASE + " AND ((AgentState = 'RUNNING' AND ExecutionStatus = 'Running'))"
    )
    # An ended state is the task's own word, or how Temporal closed a task that never said.
    terminated = list_query(TaskFilter(states=("TERMINATED", "DONE")))
    assert "(AgentState = 'TERMINATED' OR (ExecutionStatus = 'Terminated' AND AgentState NOT IN (" in terminated
    assert "(AgentState = 'DONE' OR (ExecutionStatus = 'Completed' AND AgentState NOT IN (" in terminated
    assert " OR (AgentState = 'DONE'" in terminated  # either state
    for refused in ("C:\\work", "'quoted'"):  # visibility matches neither, however written
        with pytest.raises(ValueError, match="cannot look up"):
            list_query(TaskFilter(session=refused))
    pending = list_query(TaskFilter(pending=True))
    assert pending.endswith("AgentState IN ('WAITING_APPROVAL', 'WAITING_REPLY') AND ExecutionStatus = 'Running'")


def test_state_and_since_take_what_people_type_and_name_what_they_take_otherwise():
    assert parse_states("done, waiting_approval") == ("DONE", "WAITING_APPROVAL")
    with pytest.raises(ValueError, match="unknown state THINKING: use one or more of RUNNING, WAITING_APPROVAL"):
        parse_states("thinking")  # a working phase: AgentState says RUNNING for all of them
    assert parse_since("2h", NOW) == NOW - timedelta(hours=2)
    assert parse_since("3d", NOW) == NOW - timedelta(days=3)
    assert parse_since("2026-11-25", NOW) == datetime(2026, 11, 25, tzinfo=UTC)
    assert parse_since("2026-11-25T08:30:00+02:00", NOW) == datetime(2026, 11, 25, 6, 30, tzinfo=UTC)
    with pytest.raises(ValueError, match="invalid --since 'yesterday'"):
        parse_since("yesterday", NOW)


def row(workflow_id: str, parent: str | None = None, started: str = "2026-11-26T10:00:00") -> Listed:
    return Listed(workflow_id, "RUNNING", "RUNNING", 1, 0.0, started, 5, "x", parent)


def test_subagents_go_under_their_parent_and_an_orphan_stays_where_it_came():
    # Temporal's order: newest first, so sub-agents come before their parent.
    rows = [row("p-sub2", "p", "2026-11-26T10:02:00"), row("p-sub1-sub1", "p-sub1"), row("q-sub1", "q"),
            row("p-sub1", "p", "2026-11-26T10:01:00"), row("p")]
    placed = [(r.workflow_id, r.depth) for r, _ in nested([(r, None) for r in rows])]  # type: ignore[misc]
    assert placed == [("q-sub1", 0), ("p", 0), ("p-sub1", 1), ("p-sub1-sub1", 2), ("p-sub2", 1)]


@pytest.mark.parametrize(("seconds", "shown"), [(None, "-"), (42, "42s"), (600, "10m"), (7200, "2h"),
                                                (36 * 3600, "36h"), (3 * 86400, "3d")])
def test_age_is_one_short_number_and_unit(seconds, shown):
    assert age_text(seconds) == shown

"""The search attributes a task keeps current, so people can find tasks with a query such as
``temporal workflow list --query "AgentState='WAITING_APPROVAL'"``."""

from __future__ import annotations

from temporalio.common import SearchAttributeKey, SearchAttributeUpdate

from contracts.task import TaskState

AGENT_STATE = SearchAttributeKey.for_keyword("AgentState")
AGENT_TURNS = SearchAttributeKey.for_int("AgentTurns")
AGENT_MODEL = SearchAttributeKey.for_keyword("AgentModel")
AGENT_SESSION = SearchAttributeKey.for_keyword("AgentSession")
AGENT_COST = SearchAttributeKey.for_float("AgentCostUsd")


# The loop's working phases, as AgentState shows them: one value, so a turn (thinking, then
# running a tool) changes it at most once. Waiting and final states keep their own names.
RUNNING = "RUNNING"
_WORKING = frozenset({TaskState.INITIALIZING, TaskState.THINKING, TaskState.EXECUTING_TOOL, TaskState.FINALIZING})


def searchable_values(state: TaskState, turns: int, model: str, cost_usd: float) -> tuple[str, int, str, float]:
    """The values a task keeps current. While it works, the spend to a tenth of a cent: enough to
    find the tasks that cost more than some amount, and it changes on few turns, so most
    upserts leave it out; once it waits or ends, to the millionth."""
    working = state in _WORKING
    return (RUNNING if working else state.value, turns, model, round(cost_usd, 3 if working else 6))


def state_updates(state: TaskState | str, turns: int, model: str, cost_usd: float = 0.0) -> list[SearchAttributeUpdate]:
    return [
        AGENT_STATE.value_set(state.value if isinstance(state, TaskState) else state),
        AGENT_TURNS.value_set(turns),
        AGENT_MODEL.value_set(model),
        AGENT_COST.value_set(round(cost_usd, 6)),
    ]


def session_update(session: str) -> SearchAttributeUpdate:
    return AGENT_SESSION.value_set(session)

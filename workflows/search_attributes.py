"""The search attributes a task keeps current, so people can find tasks with a query such as
``temporal workflow list --query "AgentState='WAITING_APPROVAL'"``."""

from __future__ import annotations

from datetime import timedelta

from temporalio.common import SearchAttributeKey, SearchAttributePair, SearchAttributeUpdate, TypedSearchAttributes

from contracts.task import TaskState

AGENT_STATE = SearchAttributeKey.for_keyword("AgentState")
AGENT_TURNS = SearchAttributeKey.for_int("AgentTurns")
AGENT_MODEL = SearchAttributeKey.for_keyword("AgentModel")
AGENT_SESSION = SearchAttributeKey.for_keyword("AgentSession")
AGENT_COST = SearchAttributeKey.for_float("AgentCostUsd")


# The loop's working phases, as AgentState shows them: one value, so a turn (thinking, then
# running a tool) changes it at most once. Waiting and final states keep their own names.
RUNNING = "RUNNING"
# While a task works, its turns and spend are refreshed at most this often (the state and the
# model at once, and everything exactly once it waits or ends): each upsert is a visibility
# write on the server, which per turn cost it about a sixth of its work.
REFRESH = timedelta(seconds=10)
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


def upsert_due(last: tuple | None, values: tuple, since_last: timedelta) -> bool:
    """Whether ``values`` must be upserted now, ``last`` having been set ``since_last`` ago: at
    once for a new state or model (or when nothing was set), else for new turns or spend only
    when the task is not working (a wait or the end, exact then) or ``REFRESH`` has passed."""
    if last is None:
        return True
    if values == last:
        return False
    working = values[0] == last[0] == RUNNING and values[2] == last[2]
    return not working or since_last >= REFRESH


def initial_search_attributes(model: str, session: str | None = None) -> TypedSearchAttributes:
    """What a task starts with, set by the starter so the workflow need not upsert them; its
    session too, so ``list --session`` finds a task no worker has picked up yet."""
    return TypedSearchAttributes([
        SearchAttributePair(AGENT_STATE, RUNNING),
        SearchAttributePair(AGENT_TURNS, 0),
        SearchAttributePair(AGENT_MODEL, model),
        SearchAttributePair(AGENT_COST, 0.0),
        *([SearchAttributePair(AGENT_SESSION, session)] if session else []),
    ])


def current_values(attributes: TypedSearchAttributes) -> tuple[str, int, str, float] | None:
    """The four values as the run has them (from its start, or carried over), None when any is
    missing (a task started without them upserts them all at first)."""
    state, turns = attributes.get(AGENT_STATE), attributes.get(AGENT_TURNS)
    model, cost = attributes.get(AGENT_MODEL), attributes.get(AGENT_COST)
    if state is None or turns is None or model is None or cost is None:
        return None
    return state, turns, model, cost

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


def state_updates(state: TaskState, turns: int, model: str, cost_usd: float = 0.0) -> list[SearchAttributeUpdate]:
    return [
        AGENT_STATE.value_set(state.value),
        AGENT_TURNS.value_set(turns),
        AGENT_MODEL.value_set(model),
        AGENT_COST.value_set(round(cost_usd, 6)),
    ]


def session_update(session: str) -> SearchAttributeUpdate:
    return AGENT_SESSION.value_set(session)

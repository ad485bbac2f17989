"""Replay a chat conversation's recorded histories with the current code: one recorded before
each of its patches (the code of that time), one after (docs/patches.md, "The conversation
workflow"). Recorded by ``tests/workflows/conversation_scenario.py``."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.worker import Replayer

from contracts.channels import conversation_id
from temporal.plugin import AgentPlugin
from tests.workflows.conversation_scenario import CHAT, HISTORIES
from workflows.conversation import ANSWER_PATCH, DECISIONS_PATCH, ConversationWorkflow

RECORDED = sorted(HISTORIES.glob("*.json"))


@pytest.mark.parametrize("patch", [DECISIONS_PATCH, ANSWER_PATCH])
def test_there_is_a_history_from_before_and_after_each_current_patch(patch: str):
    assert {p.stem for p in RECORDED} >= {f"before-{patch.removeprefix('conversation-')}", patch}


@pytest.mark.parametrize("path", RECORDED, ids=[p.stem for p in RECORDED])
async def test_a_recorded_conversation_replays_deterministically(path: Path):
    # Under the id it ran with: a conversation names its tasks after itself.
    history = WorkflowHistory.from_json(conversation_id(f"hooks:{CHAT}"), path.read_text())
    replayer = Replayer(workflows=[], plugins=[AgentPlugin.replaying(ConversationWorkflow)])
    result = await replayer.replay_workflow(history, raise_on_replay_failure=False)
    assert result.replay_failure is None, result.replay_failure

from pathlib import Path

from tests import configured
from tools.base import Danger
from tools.message import TOOL, MessageArgs
from tools.registry import execute


async def _send(tmp_path: Path, type_: str, text: str):
    return await TOOL.handler(MessageArgs(type=type_, text=text), configured.tool_context(workspace=tmp_path))


async def test_message_result_ends_the_task_with_the_text(tmp_path):
    result = await _send(tmp_path, "result", "All done: 3 files fixed.")
    assert result.status == "ok"
    assert result.final_result == "All done: 3 files fixed."
    assert result.content == "Task completed."
    assert result.ask is None and result.info is None


async def test_message_ask_declares_a_question(tmp_path):
    result = await _send(tmp_path, "ask", "Which branch?")
    assert result.ask == "Which branch?"
    assert result.final_result is None and result.info is None
    assert result.content


async def test_message_info_is_delivered_without_ending_the_task(tmp_path):
    result = await _send(tmp_path, "info", "Halfway there.")
    assert result.info == "Halfway there."
    assert result.content == "Message delivered to the user."
    assert result.final_result is None and result.ask is None


async def test_message_unknown_type_asks_for_a_retry(tmp_path):
    ctx = configured.tool_context(workspace=tmp_path)
    result = await execute("message", {"type": "shout", "text": "hi"}, ctx)
    assert result.status == "retry"
    assert "type" in result.content


def test_message_is_safe_and_compacts_on_type():
    assert TOOL.danger is Danger.SAFE
    assert TOOL.compact_keys == ("type",)

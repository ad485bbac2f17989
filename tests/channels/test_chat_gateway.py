"""The gateway with Slack and Telegram (issue 31's third "done when"): a message starts a task,
its dangerous call waits for a button that only an approver's press decides, its 10,000-character
answer arrives split under the platform's limit, and a 429 on the way is waited out by
Temporal's retry. Local Slack and Telegram servers, the real client libraries, a real Temporal
dev server and worker with a scripted model."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from channels.base import Adapter
from channels.config import ChannelConfig
from channels.gateway import Defaults, Gateway
from channels.slack import SlackAdapter
from channels.telegram import TelegramAdapter
from contracts.channels import ChatRef, ConversationState, InboundMessage, conversation_id
from fakes.scripted import tool
from fakes.slack_api import SlackServer
from fakes.telegram_api import TelegramServer
from tests.channels.tables import table
from tests.workflows.harness import scripted_worker
from workflows.conversation import ConversationWorkflow

T = TypeVar("T")
ANSWER = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(33))  # about 10,000 characters


async def until(find: Callable[[], T | None], what: str, timeout_s: float = 60) -> T:
    """What ``find`` finds (``what``, for the reader), once it finds something."""
    async with asyncio.timeout(timeout_s):
        while not (found := find()):
            await asyncio.sleep(0.05)
    return found


@contextlib.asynccontextmanager
async def gateway(client: Any, task_queue: str, table: ChannelConfig, adapter: Adapter,
                  data: Path) -> AsyncIterator[None]:
    defaults = Defaults(model="scripted-model", provider="openai", task_queue=task_queue, data_dir=data)
    running = asyncio.create_task(Gateway(client, [(table, adapter)], defaults, queue=f"{task_queue}-gw").run())
    try:
        yield
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


@pytest.mark.parametrize("mode", ["events", "socket"])
async def test_slack_a_thread_runs_a_task_approved_by_button_and_gets_its_long_answer(
    client, task_queue, workspace, tmp_path, mode
):
    thread = {"events": "1700000001.000100", "socket": "1700000002.000100"}[mode]  # a conversation per test
    (workspace / "build").mkdir()
    steps = [tool("shell", command="rm -rf build"), *[tool("message", type="result", text=ANSWER)] * 2]  # the 2nd verified
    async with SlackServer() as slack, scripted_worker(client, task_queue, steps) as model:
        inbound = {"signing_secret": slack.signing_secret} if mode == "events" else {"app_token": slack.app_token}
        config = table(name="slack", type="slack", allowed_users=["UALICE", "UBOB"], approvers=["UALICE"],
                       workspace=str(workspace), bot_token=slack.bot_token, mode=mode, port=0, api_url=slack.api_url,
                       **inbound)
        adapter = SlackAdapter(config)
        async with gateway(client, task_queue, config, adapter, tmp_path):
            if mode == "events":
                await until(lambda: adapter.endpoint.ready.is_set(), "the events endpoint")
                slack.request_url = adapter.endpoint.url
            else:
                await until(lambda: adapter.connected.is_set(), "the socket")
                await slack.wait_for_socket()
            event = {"type": "message", "user": "UALICE", "text": "please clean the build", "ts": thread,
                     "channel": "C0001", "channel_type": "channel"}
            assert await slack.send_event(event, "Ev01") == [200]
            assert await slack.send_event(event, "Ev01") == [200]  # Slack sent it twice: one task still

            approval = await until(lambda: next((m for m in slack.messages if m.blocks[-1]["type"] == "actions"),
                                                None), "the approval message")
            assert "rm -rf build" in approval.text and approval.thread_ts == thread
            approve = approval.blocks[-1]["elements"][0]["value"]
            await slack.press("UBOB", "C0001", approval.ts, "agent_approve", approve, thread_ts=approval.thread_ts)
            assert slack.ephemeral[-1]["user"] == "UBOB" and (workspace / "build").exists()

            slack.limit_next(1, retry_after=1, method="chat.postMessage")  # a 429: Temporal waits it out
            await slack.press("UALICE", "C0001", approval.ts, "agent_approve", approve, thread_ts=approval.thread_ts)
            await until(lambda: any("Paragraph 32" in m.text for m in slack.messages), "the answer's end")

    assert not (workspace / "build").exists()
    assert slack.rate_limited == 1  # met, and waited out
    answer = [m for m in slack.messages if m.text.startswith("Paragraph")]
    assert len(answer) == 4 and all(len(m.blocks[0]["text"]["text"]) <= 3000 for m in answer)
    assert " ".join(m.text for m in answer).split() == ANSWER.split()
    assert all(m.thread_ts == thread for m in slack.messages)  # the thread is the conversation
    assert any(m.text.startswith("Approved by UALICE") for m in slack.messages)
    # The approval message now says what was decided, and its buttons are gone.
    assert approval.text.startswith("Approved by UALICE:\nshell: rm -rf build")
    assert all(b["type"] != "actions" for b in approval.blocks)
    # The progress message, too small for the answer, went: the answer shows once, in plain words.
    [progress] = slack.deleted
    assert progress.text.startswith("⏳ step 1: shell rm -rf build") and "tool ·" not in progress.text
    assert not [m for m in slack.messages if m.text.startswith("⏳")]
    assert len(model.requests) == 3
    model.assert_consumed()


async def test_telegram_a_chat_runs_a_task_approved_by_button_and_gets_its_long_answer(
    client, task_queue, workspace, tmp_path
):
    (workspace / "build").mkdir()
    steps = [tool("shell", command="rm -rf build"), *[tool("message", type="result", text=ANSWER)] * 2]  # the 2nd verified
    async with TelegramServer() as telegram, scripted_worker(client, task_queue, steps) as model:
        config = table(name="telegram", type="telegram", allowed_users=["11", "12"], approvers=["11"],
                              workspace=str(workspace), bot_token=telegram.token, poll_timeout_s=5,
                              api_url=telegram.api_url)
        adapter = TelegramAdapter(config)
        async with gateway(client, task_queue, config, adapter, tmp_path):
            await until(lambda: adapter.polling.is_set(), "the first getUpdates")
            await telegram.user_says(11, 1001, "please clean the build")

            approval = await until(lambda: next((s for s in telegram.sent if s.reply_markup), None),
                                   "the approval message")
            assert "rm -rf build" in approval.text
            approve = approval.reply_markup["inline_keyboard"][0][0]["callback_data"]  # type: ignore[index]
            await telegram.press(12, approval, approve)
            await until(lambda: telegram.answered, "bob's answer")
            assert telegram.answered[0]["show_alert"] and (workspace / "build").exists()

            telegram.limit_next(1, retry_after=1, method="sendMessage")
            await telegram.press(11, approval, approve)
            await until(lambda: any("Paragraph 32" in s.text for s in telegram.sent), "the answer's end")

    assert not (workspace / "build").exists()
    assert telegram.answered[1] == {"text": "Approved.", "show_alert": False}
    assert telegram.rate_limited == 1  # met, and waited out
    answer = [s for s in telegram.sent if s.text.startswith("Paragraph")]
    assert len(answer) == 3 and all(len(s.text) <= 4096 for s in answer)
    assert " ".join(s.text for s in answer).split() == ANSWER.split()
    assert any(s.text.startswith("Approved by 11") for s in telegram.sent)
    # The approval message now says what was decided, and its keyboard is gone.
    assert approval.text.startswith("Approved by 11:\nshell: rm -rf build") and approval.reply_markup is None
    # The progress message, too small for the answer, went: the answer shows once, in plain words.
    [progress] = telegram.deleted
    assert progress.text.startswith("⏳ step 1: shell rm -rf build") and "tool ·" not in progress.text
    assert not [s for s in telegram.sent if s.text.startswith("⏳")]
    model.assert_consumed()


class KilledAfterHandingOver(Gateway):
    """A gateway that dies right after Temporal has a message: before its adapter can tell the
    platform (Telegram learns an update is handled only from the next getUpdates' offset)."""

    async def inbound(self, message: InboundMessage) -> None:
        await super().inbound(message)
        raise asyncio.CancelledError


async def test_telegram_a_gateway_killed_before_confirming_hands_the_update_over_again_and_it_runs_once(
    client, task_queue, workspace, tmp_path
):
    chat = ChatRef(channel="telegram", conversation="1003")  # a chat of its own: conversations outlive tests
    async with TelegramServer(chats={1003: "private"}) as telegram, \
            scripted_worker(client, task_queue, [tool("message", type="result", text="hello, once")]) as model:
        config = table(name="telegram", type="telegram", allowed_users=["11"], workspace=str(workspace),
                       bot_token=telegram.token, poll_timeout_s=5, api_url=telegram.api_url)
        first = TelegramAdapter(config)
        defaults = Defaults(model="scripted-model", provider="openai", task_queue=task_queue, data_dir=tmp_path)
        killed = asyncio.create_task(
            KilledAfterHandingOver(client, [(config, first)], defaults, queue=f"{task_queue}-gw").run())
        await until(lambda: first.polling.is_set(), "the first getUpdates")
        await telegram.user_says(11, 1003, "say hello")
        await asyncio.gather(killed, return_exceptions=True)
        [update_id] = set(telegram.served)

        second = TelegramAdapter(config)
        async with gateway(client, task_queue, config, second, tmp_path):
            await until(lambda: telegram.served.count(update_id) == 2, "the update served again")
            polls = telegram.polls
            await until(lambda: telegram.polls > polls, "the restarted gateway's next poll: it handed it over")
            await until(lambda: any(s.text == "hello, once" for s in telegram.sent), "the answer")
            state = await client.get_workflow_handle(conversation_id(chat)).query(
                ConversationWorkflow.conversation, result_type=ConversationState)
    assert state.tasks == 1 and state.seen == [str(update_id)]
    assert [s.text for s in telegram.sent].count("hello, once") == 1
    model.assert_consumed()


async def test_slack_acknowledges_a_file_in_time_though_it_downloads_slowly_and_the_model_still_gets_it(
    client, task_queue, workspace, tmp_path
):
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    steps = [tool("message", type="result", text="a tiny picture")]
    async with SlackServer(file_delay_s=5.0) as slack, scripted_worker(client, task_queue, steps) as model:
        config = table(name="slack", type="slack", allowed_users=["UALICE"], workspace=str(workspace),
                       bot_token=slack.bot_token, signing_secret=slack.signing_secret, port=0, api_url=slack.api_url)
        adapter = SlackAdapter(config)
        async with gateway(client, task_queue, config, adapter, tmp_path):
            await until(lambda: adapter.endpoint.ready.is_set(), "the events endpoint")
            slack.request_url = adapter.endpoint.url
            image = slack.add_file("shot.png", "image/png", png)
            event = {"type": "message", "subtype": "file_share", "user": "UALICE", "text": "what is this?",
                     "ts": "1700000005.000100", "channel": "C0001", "channel_type": "channel", "files": [image]}
            assert await slack.send_event(event, "Ev05") == [200]  # within Slack's 3 s: the download is not waited on
            assert slack.files_served == 0
            await until(lambda: any(m.text == "a tiny picture" for m in slack.messages), "the answer")
    [said] = [m["content"] for m in model.requests[0]["messages"] if m["role"] == "user"]
    assert said.startswith("what is this?\n[attached: attachments/shot.png (")  # a model without images: text
    assert (workspace / "attachments" / "shot.png").read_bytes() == png and slack.files_served == 1
    model.assert_consumed()

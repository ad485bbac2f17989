"""The Telegram adapter against a local Bot API (fakes/telegram_api.py) that speaks the
documented shapes and errors, driven through the real python-telegram-bot."""

from __future__ import annotations

import asyncio
import base64
import contextlib
from collections.abc import AsyncIterator

import aiohttp
import pytest
from structlog.testing import capture_logs
from telegram.error import InvalidToken

from channels.base import RateLimited
from channels.telegram import TelegramAdapter
from contracts.channels import Button, ChatRef, OutboundMessage
from fakes.telegram_api import TelegramServer
from tests.channels.tables import Inbox, table, until

ALICE, BOB, MALLORY = 11, 12, 13


@contextlib.asynccontextmanager
async def running(mode: str = "polling", inbox: Inbox | None = None) -> AsyncIterator[
        tuple[TelegramServer, TelegramAdapter, Inbox]]:
    inbox = inbox or Inbox()
    async with TelegramServer() as telegram:
        adapter = TelegramAdapter(table(
            name="telegram", type="telegram", allowed_users=[str(ALICE), str(BOB)], approvers=[str(ALICE)],
            bot_token=telegram.token, mode=mode, webhook_secret="s3cret-token_1", port=0, poll_timeout_s=5,
            api_url=telegram.api_url))
        task = asyncio.create_task(adapter.receive(inbox))
        if mode == "webhook":
            await asyncio.wait_for(adapter.endpoint.ready.wait(), 10)
            while not telegram.webhook_url:
                await asyncio.sleep(0.02)
        else:
            await asyncio.wait_for(adapter.polling.wait(), 10)
        try:
            yield telegram, adapter, inbox
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
            await adapter.close()


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_a_message_from_an_allowed_user_is_delivered_once(mode):
    async with running(mode) as (telegram, _, inbox):
        await telegram.user_says(ALICE, 1001, "list the files")
        message = await inbox.next()
        await telegram.user_says(ALICE, -100200, "in a topic", thread_id=77)
        topic = await inbox.next()
    assert message.text == "list the files" and message.author == str(ALICE)
    assert message.chat == ChatRef(channel="telegram", conversation="1001")
    assert topic.chat == ChatRef(channel="telegram", conversation="-100200", thread="77")
    assert inbox.attempts == 2 and message.event_id != topic.event_id


async def test_the_offset_moves_only_after_deliver_returns_so_a_failed_update_is_fetched_again():
    async with running(inbox=Inbox(fail=1)) as (telegram, _, inbox):
        await telegram.user_says(ALICE, 1001, "hello")
        message = await inbox.next()
    assert inbox.attempts == 2 and [m.text for m in inbox.messages] == ["hello"]
    assert telegram.served.count(int(message.event_id)) == 2  # served, not confirmed, served again


async def test_a_failed_webhook_delivery_is_answered_500_and_sent_again():
    async with running("webhook", Inbox(fail=1)) as (telegram, _, inbox):
        statuses = await telegram.user_says(ALICE, 1001, "hello")
    assert statuses == [500, 200] and inbox.attempts == 2 and len(inbox.messages) == 1


async def test_strangers_and_bots_are_ignored_and_a_strangers_message_is_one_console_line():
    async with running() as (telegram, _, inbox):
        with capture_logs() as logs:
            await telegram.user_says(MALLORY, 1001, "rm -rf /")
            await telegram.user_says(7000099, 1001, "beep", is_bot=True)
            await telegram.user_says(BOB, 1001, "the one that counts")
            message = await inbox.next()
    assert inbox.attempts == 1 and message.author == str(BOB)
    assert [entry["event"] for entry in logs if entry["log_level"] == "info"] == [
        f"message dropped: telegram:1001 · user{MALLORY} ({MALLORY}) · “rm -rf /” (not in allowed_users)"]


@pytest.mark.parametrize("mode", ["polling", "webhook"])
async def test_an_approvers_button_becomes_an_approval_and_a_non_approvers_is_answered_no(mode):
    async with running(mode) as (telegram, adapter, inbox):
        chat = ChatRef(channel="telegram", conversation="-100200", thread="77")
        sent = await adapter.send(OutboundMessage(chat=chat, key="call-9f2c", kind="approval", text="Run `rm x`?",
                                                  buttons=[Button(action="approve", label="✅ Approve"),
                                                           Button(action="deny", label="❌ Deny")]))
        [approval] = telegram.sent
        assert approval.message_thread_id == 77
        approve = approval.reply_markup["inline_keyboard"][0][0]["callback_data"]  # type: ignore[index]
        with capture_logs() as logs:
            await telegram.press(BOB, approval, approve)
            await telegram.press(ALICE, approval, approve)
            decision = await inbox.next()
            await until(lambda: len(telegram.answered) == 2)  # the answer follows deliver
    assert inbox.attempts == 1
    assert decision.reaction == "approve" and decision.author == str(ALICE) and decision.chat == chat
    assert decision.reply_to == sent.message_ids[0]
    assert telegram.answered == [{"text": "Only approvers may decide a call.", "show_alert": True},
                                 {"text": "Approved.", "show_alert": False}]
    assert [entry["event"] for entry in logs if entry["log_level"] == "info"] == [
        f"message dropped: telegram:-100200:77 · user{BOB} ({BOB}) · pressed approve (not an approver)"]


async def test_a_wrong_webhook_secret_token_is_refused():
    async with running("webhook") as (telegram, _, inbox):
        async with aiohttp.ClientSession() as http:
            update = {"update_id": 1, "message": {"message_id": 1, "date": 0, "text": "hi",
                                                  "chat": {"id": 1001, "type": "private"},
                                                  "from": {"id": ALICE, "is_bot": False, "first_name": "A"}}}
            async with http.post(telegram.webhook_url, json=update,
                                 headers={"X-Telegram-Bot-Api-Secret-Token": "guess"}) as wrong:
                pass
            async with http.post(telegram.webhook_url, json=update) as missing:
                pass
    assert (wrong.status, missing.status) == (403, 403) and inbox.attempts == 0


async def test_a_10000_character_answer_is_split_under_the_4096_limit_and_progress_edits_in_place():
    async with running() as (telegram, adapter, _):
        chat = ChatRef(channel="telegram", conversation="1001")
        text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(33))
        answer = await adapter.send(OutboundMessage(chat=chat, key="a1", kind="answer", text=text))
        progress = await adapter.send(OutboundMessage(chat=chat, key="p1", kind="progress", text="turn 1"))
        for _ in range(2):  # the second is a retried activity: "message is not modified" is fine
            await adapter.send(OutboundMessage(chat=chat, key="p2", kind="progress", text="turn 2",
                                               edit_of=progress.message_ids[0]))
    assert len(text) > 10_000 and len(answer.message_ids) == 3
    assert all(len(s.text) <= 4096 for s in telegram.sent[:3])
    assert " ".join(s.text for s in telegram.sent[:3]).split() == text.split()
    assert len(telegram.sent) == 4 and telegram.sent[3].text == "turn 2" and telegram.sent[3].edits == 1


async def test_an_answer_replaces_its_progress_message_or_deletes_it_when_too_long():
    async with running() as (telegram, adapter, _):
        chat = ChatRef(channel="telegram", conversation="1001")
        short = await adapter.send(OutboundMessage(chat=chat, key="p1", kind="progress", text="⏳ step 1: shell ls"))
        await adapter.send(OutboundMessage(chat=chat, key="a1", kind="answer", text="all fine",
                                           edit_of=short.message_ids[0]))
        long = await adapter.send(OutboundMessage(chat=chat, key="p2", kind="progress", text="⏳ step 1: shell ls"))
        text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(15))  # over one message's 4,096
        for _ in range(2):  # the second is a retried activity: deleted and posted once
            await adapter.send(OutboundMessage(chat=chat, key="a2", kind="answer", text=text,
                                               edit_of=long.message_ids[0]))
    assert telegram.sent[0].text == "all fine" and telegram.sent[0].edits == 1  # the progress message became it
    assert [str(s.message_id) for s in telegram.deleted] == long.message_ids  # too long for it: it went
    assert " ".join(s.text for s in telegram.sent[1:]).split() == text.split()
    assert not [s for s in telegram.sent if s.text.startswith("⏳")]


async def test_code_shows_as_code_and_html_in_an_answer_is_text():
    text = "Run:\n```sh\necho '<b>' && ls\n```\nthen `cat a&b.txt`, not <i>this</i>."
    async with running() as (telegram, adapter, _):
        await adapter.send(OutboundMessage(chat=ChatRef(channel="telegram", conversation="1001"), key="c1",
                                           kind="answer", text=text))
    [sent] = telegram.sent
    assert sent.text == "Run:\necho '<b>' && ls\nthen cat a&b.txt, not <i>this</i>."  # as the chat shows it
    pre = next(e for e in sent.entities if e["type"] == "pre")
    assert pre["language"] == "sh" and sent.text[pre["offset"]:pre["offset"] + pre["length"]] == "echo '<b>' && ls"
    code = [e for e in sent.entities if e["type"] == "code" and "language" not in e]
    assert [sent.text[e["offset"]:e["offset"] + e["length"]] for e in code] == ["cat a&b.txt"]


async def test_a_429_surfaces_as_rate_limited_with_telegrams_retry_after():
    async with TelegramServer() as telegram:
        adapter = TelegramAdapter(table(name="telegram", type="telegram", bot_token=telegram.token,
                                                 api_url=telegram.api_url))
        await adapter.bot.initialize()
        telegram.limit_next(1, retry_after=23)
        with pytest.raises(RateLimited) as limited:
            await adapter.send(OutboundMessage(chat=ChatRef(channel="telegram", conversation="1001"), key="k",
                                               text="x"))
        await adapter.close()
    assert limited.value.retry_after_s == 23


async def test_a_wrong_token_is_unauthorized():
    async with TelegramServer() as telegram:
        adapter = TelegramAdapter(table(name="telegram", type="telegram", bot_token="7000001:wrong",
                                                 api_url=telegram.api_url))
        with pytest.raises(InvalidToken):
            await adapter.receive(Inbox())


async def test_two_pollers_at_once_survive_telegrams_conflict_and_hand_every_update_over():
    inbox = Inbox()
    async with TelegramServer() as telegram:
        adapters = [TelegramAdapter(table(name="telegram", type="telegram", allowed_users=[str(ALICE)],
                                          bot_token=telegram.token, poll_timeout_s=5, api_url=telegram.api_url))
                    for _ in range(2)]
        tasks = [asyncio.create_task(adapter.receive(inbox)) for adapter in adapters]
        await until(lambda: telegram.conflicts)  # both poll: the second ended the first's wait
        for n in range(3):
            await telegram.user_says(ALICE, 1001, f"message {n}")
        await until(lambda: {m.text for m in inbox.messages} == {"message 0", "message 1", "message 2"})
        assert not any(task.done() for task in tasks)  # a 409 stops no poller
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for adapter in adapters:
            await adapter.close()


async def test_a_photo_arrives_with_its_caption_and_its_bytes():
    jpeg = b"\xff\xd8\xff\xe0" + bytes(range(100))
    async with TelegramServer() as telegram:
        inbox = Inbox()
        adapter = TelegramAdapter(table(name="telegram", type="telegram", allowed_users=[str(ALICE)],
                                        bot_token=telegram.token, poll_timeout_s=5, api_url=telegram.api_url,
                                        file_url=telegram.file_url))
        task = asyncio.create_task(adapter.receive(inbox))
        await telegram.user_sends_photo(ALICE, 1001, "what is this?", jpeg)
        message = await inbox.next()
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        await adapter.close()
    [photo] = message.attachments
    assert message.text == "what is this?" and (photo.kind, photo.media_type) == ("image", "image/jpeg")
    assert base64.b64decode(photo.data_b64 or "") == jpeg and photo.url is None


async def test_start_starts_nothing_and_a_groups_command_loses_the_bots_name():
    async with running() as (telegram, _, inbox):
        await telegram.user_says(ALICE, 1001, "/start")
        await telegram.user_says(ALICE, -100200, "/stop@agent_bot")
        message = await inbox.next()
    assert inbox.attempts == 1 and message.text == "/stop"


async def test_a_split_answer_retried_after_a_429_posts_only_the_pieces_still_missing(tmp_path):
    text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(33))
    async with TelegramServer() as telegram:
        config = table(name="telegram", type="telegram", bot_token=telegram.token, api_url=telegram.api_url)
        answer = OutboundMessage(chat=ChatRef(channel="telegram", conversation="1001"), key="answer-1", kind="answer",
                                 text=text)
        telegram.limit_next(1, retry_after=2, method="sendMessage", after=1)
        first = TelegramAdapter(config, tmp_path)
        with pytest.raises(RateLimited):
            await first.send(answer)  # one piece out, then a 429
        await first.close()
        again = TelegramAdapter(config, tmp_path)
        sent = await again.send(answer)  # the retry, on a restarted gateway even
        await again.close()
    assert len(telegram.sent) == len(sent.message_ids) == 3
    assert " ".join(s.text for s in telegram.sent).split() == text.split()

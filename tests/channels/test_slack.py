"""The Slack adapter against a local Slack (fakes/slack_api.py) that speaks the Web API, Events
API, interactivity and Socket Mode wire, driven through the real slack_sdk clients."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import time
from collections.abc import AsyncIterator

import aiohttp
import pytest
from structlog.testing import capture_logs

from channels.base import RateLimited
from channels.slack import SlackAdapter
from contracts.channels import Button, ChatRef, OutboundMessage
from fakes.slack_api import BOT_ID, BOT_USER, SlackServer
from tests.channels.tables import Inbox, table, until


@contextlib.asynccontextmanager
async def running(mode: str = "events", inbox: Inbox | None = None) -> AsyncIterator[tuple[SlackServer, SlackAdapter,
                                                                                           Inbox]]:
    inbox = inbox or Inbox()
    async with SlackServer() as slack:
        adapter = SlackAdapter(table(
            name="slack", type="slack", allowed_users=["UALICE", "UBOB"], approvers=["UALICE"],
            bot_token=slack.bot_token, mode=mode, port=0, api_url=slack.api_url,
            **({"signing_secret": slack.signing_secret} if mode == "events" else {"app_token": slack.app_token})))
        task = asyncio.create_task(adapter.receive(inbox))
        if mode == "events":
            await asyncio.wait_for(adapter.endpoint.ready.wait(), 10)
            slack.request_url = adapter.endpoint.url
        else:
            await asyncio.wait_for(adapter.connected.wait(), 10)
            await slack.wait_for_socket()
        try:
            yield slack, adapter, inbox
        finally:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task


def said(user: str, text: str, ts: str = "1700000001.000100", channel: str = "C0001", **more: object) -> dict:
    return {"type": "message", "user": user, "text": text, "ts": ts, "channel": channel,
            "channel_type": "im" if channel.startswith("D") else "channel", **more}


@pytest.mark.parametrize("mode", ["events", "socket"])
async def test_a_message_from_an_allowed_user_is_delivered_once_as_a_thread_of_its_own(mode):
    async with running(mode) as (slack, _, inbox):
        statuses = await slack.send_event(said("UALICE", "list the files"), "Ev01")
        await slack.send_event(said("UALICE", f"<@{BOT_USER}> and the dirs", ts="1700000003.000100"), "Ev02")
    assert statuses == [200]
    message, mention = inbox.messages
    assert message.event_id == "Ev01" and message.author == "UALICE" and message.text == "list the files"
    assert mention.text == "and the dirs"  # the bot's mention is not part of what was asked
    assert message.chat == ChatRef(channel="slack", conversation="C0001", thread="1700000001.000100")


async def test_a_dm_is_one_conversation_and_a_thread_in_it_another():
    async with running() as (slack, _, inbox):
        await slack.send_event(said("UALICE", "hi", channel="D0001"), "Ev01")
        await slack.send_event(said("UALICE", "more", channel="D0001", ts="1700000009.000100",
                                    thread_ts="1700000001.000100"), "Ev02")
    assert [m.chat.thread for m in inbox.messages] == [None, "1700000001.000100"]


@pytest.mark.parametrize("mode", ["events", "socket"])
async def test_an_event_is_acknowledged_only_after_deliver_returns_so_a_failure_brings_it_again(mode):
    async with running(mode, Inbox(fail=1)) as (slack, _, inbox):
        statuses = await slack.send_event(said("UALICE", "hello"), "Ev07")
    assert statuses[0] != 200 and statuses[-1] == 200 and len(statuses) == 2  # retried once, then acked
    assert inbox.attempts == 2 and [m.event_id for m in inbox.messages] == ["Ev07"]


async def test_strangers_and_bots_are_ignored():
    async with running() as (slack, _, inbox):
        assert await slack.send_event(said("UMALLORY", "rm -rf /"), "Ev01") == [200]
        await slack.send_event(said("UOTHER", "beep", bot_id="B0999", subtype="bot_message"), "Ev02")
        await slack.send_event(said(BOT_USER, "my own answer", bot_id=BOT_ID), "Ev03")
        await slack.send_event(said("UALICE", "edited", subtype="message_changed"), "Ev04")
    assert inbox.attempts == 0


@pytest.mark.parametrize("mode", ["events", "socket"])
async def test_an_approvers_button_becomes_an_approval_replying_to_the_approval_message(mode):
    async with running(mode) as (slack, adapter, inbox):
        chat = ChatRef(channel="slack", conversation="C0001", thread="1700000001.000100")
        sent = await adapter.send(OutboundMessage(chat=chat, key="call-9f2c", kind="approval", text="Run `rm x`?",
                                                  buttons=[Button(action="approve", label="Approve"),
                                                           Button(action="deny", label="Deny")]))
        [approval] = slack.in_channel("C0001")
        buttons = approval.blocks[-1]["elements"]
        assert [b["value"] for b in buttons] == ["approve:call-9f2c", "deny:call-9f2c"]
        await slack.press("UALICE", "C0001", sent.message_ids[0], "agent_deny", buttons[1]["value"],
                          thread_ts=approval.thread_ts)
    [decision] = inbox.messages
    assert decision.reaction == "deny" and decision.reply_to == sent.message_ids[0] and decision.chat == chat


async def test_a_non_approvers_button_is_not_delivered_and_is_told_no():
    with capture_logs() as logs:
        async with running() as (slack, _, inbox):
            assert await slack.press("UBOB", "C0001", "1700000002.000100", "agent_approve", "approve:k") == [200]
    assert inbox.attempts == 0
    assert slack.ephemeral == [{"channel": "C0001", "user": "UBOB", "text": "Only approvers may decide a call."}]
    assert [entry["event"] for entry in logs if entry["log_level"] == "info"] == [
        "message dropped: slack:C0001 · ubob (UBOB) · pressed approve (not an approver)"]


async def test_a_bad_or_stale_signature_is_refused_and_the_url_challenge_answered():
    async with running() as (slack, _, inbox):
        body = json.dumps({"type": "event_callback", "event_id": "Ev1", "event": said("UALICE", "hi")}).encode()
        forged, _ = await slack.post_signed(body, "application/json", secret="not-the-secret")
        stale, _ = await slack.post_signed(body, "application/json", timestamp=int(time.time()) - 6 * 60)
        assert json.loads(await slack.verify_url("c-123")) == {"challenge": "c-123"}
    assert (forged, stale) == (401, 401) and inbox.attempts == 0


async def test_a_10000_character_answer_is_split_under_slacks_block_limit():
    async with running() as (slack, adapter, _):
        chat = ChatRef(channel="slack", conversation="C0001", thread="1700000001.000100")
        text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(33))
        sent = await adapter.send(OutboundMessage(chat=chat, key="a1", kind="answer", text=text))
    posted = slack.in_channel("C0001")
    assert len(text) > 10_000 and len(sent.message_ids) == len(posted) == 4
    assert all(len(m.blocks[0]["text"]["text"]) <= 3000 for m in posted)
    assert all(m.thread_ts == "1700000001.000100" for m in posted)
    assert " ".join(m.text for m in posted).split() == text.split()


async def test_progress_is_one_message_edited_in_place():
    async with running() as (slack, adapter, _):
        chat = ChatRef(channel="slack", conversation="D0001")
        first = await adapter.send(OutboundMessage(chat=chat, key="p1", kind="progress", text="turn 1"))
        again = await adapter.send(OutboundMessage(chat=chat, key="p2", kind="progress", text="turn 2 <b>",
                                                   edit_of=first.message_ids[0]))
    [progress] = slack.in_channel("D0001")
    assert again.message_ids == first.message_ids and progress.edits == 1 and progress.text == "turn 2 &lt;b&gt;"


async def test_an_answer_replaces_its_progress_message_or_deletes_it_when_too_long():
    async with running() as (slack, adapter, _):
        chat = ChatRef(channel="slack", conversation="D0001")
        short = await adapter.send(OutboundMessage(chat=chat, key="p1", kind="progress", text="⏳ step 1: shell ls"))
        await adapter.send(OutboundMessage(chat=chat, key="a1", kind="answer", text="all fine",
                                           edit_of=short.message_ids[0]))
        long = await adapter.send(OutboundMessage(chat=chat, key="p2", kind="progress", text="⏳ step 1: shell ls"))
        text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(12))  # over one section's 3,000
        for _ in range(2):  # the second is a retried activity: deleted and posted once
            await adapter.send(OutboundMessage(chat=chat, key="a2", kind="answer", text=text,
                                               edit_of=long.message_ids[0]))
    posted = slack.in_channel("D0001")
    assert posted[0].text == "all fine" and posted[0].edits == 1  # the progress message became the answer
    assert [m.ts for m in slack.deleted] == long.message_ids, slack.calls  # too long for it: it went
    assert " ".join(m.text for m in posted[1:]).split() == text.split()
    assert not [m for m in posted if m.text.startswith("⏳")]


async def test_a_429_surfaces_as_rate_limited_with_slacks_retry_after():
    async with running() as (slack, adapter, _):
        slack.limit_next(1, retry_after=17)
        with pytest.raises(RateLimited) as limited:
            await adapter.send(OutboundMessage(chat=ChatRef(channel="slack", conversation="C0001"), key="k", text="x"))
    assert limited.value.retry_after_s == 17


async def test_a_wrong_token_is_slacks_invalid_auth():
    from slack_sdk.errors import SlackApiError

    async with SlackServer() as slack:
        adapter = SlackAdapter(table(name="slack", type="slack", bot_token="xoxb-wrong", signing_secret="s",
                                             api_url=slack.api_url))
        with pytest.raises(SlackApiError, match="invalid_auth"):
            await adapter.send(OutboundMessage(chat=ChatRef(channel="slack", conversation="C0001"), key="k", text="x"))


def test_a_table_without_what_its_mode_needs_is_refused_by_name():
    with pytest.raises(ValueError, match=r"\[slack\]: the Events API needs signing_secret"):
        SlackAdapter(table(name="slack", type="slack", bot_token="xoxb-1"))
    with pytest.raises(ValueError, match=r"\[slack\]: bot_token: Field required"):
        SlackAdapter(table(name="slack", type="slack", mode="socket", app_token="xapp-1"))


async def test_a_posted_image_is_handed_over_by_id_and_its_bytes_fetched_after_with_the_bot_token():
    png = b"\x89PNG\r\n\x1a\n" + bytes(range(64))
    async with running() as (slack, adapter, inbox):
        image = slack.add_file("shot.png", "image/png", png)
        await slack.send_event(said("UALICE", "what is this?", subtype="file_share", files=[image]), "Ev01")
        [handed] = inbox.messages[0].attachments
        assert handed.file_id == image["id"] and handed.data_b64 is None and slack.files_served == 0
        attachment = await adapter.fetched(handed)
        async with aiohttp.ClientSession() as http, http.get(image["url_private"]) as anonymous:
            assert anonymous.content_type == "text/html"  # what a client without the token gets
    assert (attachment.kind, attachment.name, attachment.media_type) == ("image", "shot.png", "image/png")
    assert base64.b64decode(attachment.data_b64 or "") == png and attachment.file_id is None


async def test_an_event_whose_deliver_hangs_is_answered_before_slacks_deadline_and_its_retry_delivered():
    class Hanging(Inbox):
        async def __call__(self, message):
            if not self.attempts:
                self.attempts += 1
                await asyncio.Event().wait()  # Temporal does not answer
            await super().__call__(message)

    async with running(inbox=Hanging()) as (slack, _, inbox):
        statuses = await slack.send_event(said("UALICE", "hello"), "Ev08")
    assert statuses == [500, 200]  # given up in time (not Slack's timeout: 0), then Slack's retry
    assert [m.event_id for m in inbox.messages] == ["Ev08"]


async def test_a_split_answer_retried_after_a_429_posts_only_the_pieces_still_missing(tmp_path):
    text = "\n\n".join(f"Paragraph {i}: " + "word " * 60 for i in range(33))
    async with SlackServer() as slack:
        config = table(name="slack", type="slack", bot_token=slack.bot_token, signing_secret="s", api_url=slack.api_url)
        answer = OutboundMessage(chat=ChatRef(channel="slack", conversation="C0001", thread="1700000001.000100"),
                                 key="answer-1", kind="answer", text=text)
        slack.limit_next(1, retry_after=2, method="chat.postMessage", after=2)
        with pytest.raises(RateLimited):
            await SlackAdapter(config, tmp_path).send(answer)  # two pieces out, then a 429
        sent = await SlackAdapter(config, tmp_path).send(answer)  # the retry, on a restarted gateway even
    assert len(slack.messages) == len(sent.message_ids) == 4
    assert sent.message_ids == [m.ts for m in slack.messages]
    assert " ".join(m.text for m in slack.messages).split() == text.split()


async def test_socket_mode_opens_a_new_socket_when_slack_says_disconnect_and_events_keep_coming():
    async with running("socket") as (slack, _, inbox):
        await slack.disconnect()
        await until(lambda: slack.connections == 2)
        await until(lambda: slack.sockets_open == 1)  # the old socket closed by the client
        assert await slack.send_event(said("UALICE", "still there?"), "Ev09") == [200]
    assert [m.text for m in inbox.messages] == ["still there?"]

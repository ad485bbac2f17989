"""Every message the Matrix channel accepts reaches a task (issue 41, item 5), on a real Synapse:
an image, a file and a text sent within 100 ms of an answer, in the room and in a thread, each
reach the model's request, the image as an image (a model that takes images). Two ways they
were lost: a sync batch Synapse cut short (``limited``, more than 10 events: the burst test
below), and a message handed to the task as it finished (test_conversation_late_message.py;
here it shows only when the timing falls in that window)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest
from structlog.testing import capture_logs

from tests.channels.synapse import require_synapse

require_synapse()
pytest.importorskip("nio", reason="matrix-nio is not installed: pip install 'durable-agent[channels]'")

from nio import RoomSendResponse, UploadResponse  # noqa: E402

from channels.matrix import MatrixAdapter  # noqa: E402
from contracts.channels import ChatRef, ConversationState, InboundMessage, conversation_id  # noqa: E402
from fakes.scripted import Step, tool  # noqa: E402
from tests.channels.matrix_users import ChatUser  # noqa: E402
from tests.channels.test_matrix_gateway import gateway, matrix_table, person  # noqa: E402
from tests.providers.images import png  # noqa: E402
from tests.workflows.harness import scripted_worker  # noqa: E402
from workflows.conversation import ConversationWorkflow  # noqa: E402

AGENT = "@agent:localhost"
PICTURE = png(5, 3)
NOTES = b"line one\nline two\n"
# Each request is answered at once; how many there are depends on when each message lands
# (in the answering task, or in the next), so the script has more than enough.
ANSWERS = [tool("message", type="result", text=f"answer {n}") for n in range(2, 12)]


def user_parts(request: dict) -> list[dict]:
    """The parts of every user message of a request, text as ``{"type": "text"}`` parts."""
    parts: list[dict] = []
    for message in request["messages"]:
        if message["role"] == "user":
            content = message["content"]
            parts += [{"type": "text", "text": content}] if isinstance(content, str) else content
    return parts


def reached(requests: list[dict], where: str) -> dict[str, bool]:
    """Which of the three messages sent ``where`` some request shows: the image as an image."""
    seen = {"image": False, "file": False, "text": False}
    for request in requests:
        parts = user_parts(request)
        texts = " ".join(p.get("text", "") for p in parts)
        images = [p for p in parts if p.get("type") == "image_url"]
        seen["image"] |= f"attachments/{where}.png" in texts and any(
            p["image_url"]["url"].startswith("data:image/png;base64,") for p in images)
        seen["file"] |= f"attachments/{where}-notes.txt" in texts
        seen["text"] |= f"and the text, {where}" in texts
    return seen


async def upload(alice: ChatUser, data: bytes, name: str, content_type: str) -> str:
    uploaded, _ = await alice.client.upload(io.BytesIO(data), content_type=content_type, filename=name,
                                           filesize=len(data))
    assert isinstance(uploaded, UploadResponse), uploaded
    return uploaded.content_uri


async def send(alice: ChatUser, room: str, content: dict, root: str | None = None) -> str:
    if root is not None:  # in the thread, as Element sends it
        content["m.relates_to"] = {"rel_type": "m.thread", "event_id": root, "is_falling_back": True,
                                   "m.in_reply_to": {"event_id": root}}
    sent = await alice.client.room_send(room, "m.room.message", content)
    assert isinstance(sent, RoomSendResponse), sent
    return sent.event_id


@pytest.mark.parametrize("where", ["room", "thread"])
async def test_an_image_a_file_and_a_text_sent_as_an_answer_comes_each_reach_a_task(
    client, task_queue, workspace, tmp_path, synapse, where
):
    held = Step(tool_calls=[("message", {"type": "result", "text": "answer 1"})], hold=True)
    alice = await person(synapse, "alice")
    table = matrix_table(synapse, workspace=str(workspace))
    try:
        async with scripted_worker(client, task_queue, [held, *ANSWERS]) as model, \
                gateway(client, task_queue, table, tmp_path, model="gpt-4o"):
            room = await alice.create_room(invite=[AGENT])
            await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
            root = None
            if where == "thread":  # a notice is never answered: the thread's root starts nothing
                root = await send(alice, room, {"msgtype": "m.notice", "body": "topic"})
            picture = await upload(alice, PICTURE, f"{where}.png", "image/png")
            notes = await upload(alice, NOTES, f"{where}-notes.txt", "text/plain")
            await send(alice, room, {"msgtype": "m.text", "body": "hello"}, root)
            async with asyncio.timeout(60):
                while model.hits() < 1:  # the answer is on its way: held until the messages go
                    await asyncio.sleep(0.02)

            model.release()
            await send(alice, room, {"msgtype": "m.image", "body": f"{where}.png", "url": picture,
                                     "info": {"mimetype": "image/png", "size": len(PICTURE)}}, root)
            await send(alice, room, {"msgtype": "m.file", "body": f"{where}-notes.txt", "url": notes,
                                     "info": {"mimetype": "text/plain", "size": len(NOTES)}}, root)
            await send(alice, room, {"msgtype": "m.text", "body": f"and the text, {where}"}, root)

            chat = conversation_id(ChatRef(channel="matrix", conversation=room, thread=root))
            handle = client.get_workflow_handle(chat)
            async with asyncio.timeout(90):  # each reached a request, or the conversation went quiet without
                while True:
                    seen = reached(model.requests, where)
                    state = await handle.query(ConversationWorkflow.conversation, result_type=ConversationState)
                    if all(seen.values()) or (state.running is None and not state.pending
                                              and len(state.seen) >= 4 and model.hits() > 1):
                        break
                    await asyncio.sleep(0.1)
    finally:
        await alice.close()
    assert seen == {"image": True, "file": True, "text": True}, json.dumps(
        [user_parts(r) for r in model.requests])[:3000]
    assert not model.unexpected and not model.rejected


async def test_a_burst_larger_than_a_sync_batch_reaches_deliver_whole_and_each_drop_is_logged(tmp_path, synapse):
    """More messages than one sync's timeline holds (Synapse: 10 a room) arrive while the
    gateway is busy with the first: a limited batch's gap is fetched, none is skipped; what is
    not a message to answer (an edit, an emote, a stray reaction) is one log line each."""
    alice = await person(synapse, "alice")
    adapter = MatrixAdapter(matrix_table(synapse), tmp_path / "gateway")
    first, go_on, got = asyncio.Event(), asyncio.Event(), []

    async def deliver(message: InboundMessage) -> None:
        got.append(message.text)
        first.set()
        await go_on.wait()  # busy with the first while the rest come

    receiving = asyncio.create_task(adapter.receive(deliver))
    try:
        async with asyncio.timeout(60):
            while not adapter.state.sync_file.exists():  # its first sync: from now on
                assert not receiving.done(), receiving
                await asyncio.sleep(0.05)
        room = await alice.create_room(invite=[AGENT])
        await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
        await alice.say(room, "message 0")
        async with asyncio.timeout(60):
            while not first.is_set():
                assert not receiving.done(), receiving
                await asyncio.sleep(0.05)
        with capture_logs() as logs:
            for n in range(1, 25):
                sent = await alice.say(room, f"message {n}")
            edit = {"msgtype": "m.text", "body": "* changed", "m.new_content": {"msgtype": "m.text", "body": "changed"},
                    "m.relates_to": {"rel_type": "m.replace", "event_id": sent}}
            dropped = [await send(alice, room, edit), await send(alice, room, {"msgtype": "m.emote", "body": "waves"}),
                       await alice.react(room, sent, "🎉")]
            await alice.say(room, "message 25")
            go_on.set()
            async with asyncio.timeout(60):
                while "message 25" not in got:  # the last: what came before it has come by then
                    assert not receiving.done(), receiving
                    await asyncio.sleep(0.05)
    finally:
        receiving.cancel()
        await asyncio.gather(receiving, return_exceptions=True)
        await adapter.close()
        await alice.close()
    assert got == [f"message {n}" for n in range(26)]
    lines = {e["event_id"]: e["event"] for e in logs if e["event"].startswith("ignored a message")}
    assert [lines.get(event_id, "") for event_id in dropped] == [
        "ignored a message: an edit: the message it edits was taken as it was sent",
        "ignored a message: a message of a kind the agent does not read (msgtype 'm.emote')",
        "ignored a message: a reaction (🎉) that is not ✅ ❌ or 🛑"]

"""Matrix beyond the room's main timeline, on a real Synapse: a thread is a conversation of its
own whose answers stay in the thread; an image posted there reaches the task (a file in the
workspace, shown to a model that takes images); and a 429 from the homeserver is waited out by
Temporal's retry, each message posted once."""

from __future__ import annotations

import io
import json

import httpx
import pytest

from tests.channels.synapse import require_synapse

require_synapse()
pytest.importorskip("nio", reason="matrix-nio is not installed: pip install 'durable-agent[channels]'")

from nio import RoomSendResponse, UploadResponse  # noqa: E402

from contracts.channels import ChatRef, conversation_id  # noqa: E402
from fakes.scripted import tool  # noqa: E402
from tests.channels.test_matrix_gateway import gateway, matrix_table, person, request_text  # noqa: E402
from tests.providers.images import png  # noqa: E402
from tests.workflows.harness import scripted_worker  # noqa: E402

AGENT = "@agent:localhost"
PLOT = png(6, 4)


def in_thread(event: dict, root: str) -> bool:
    relates = event["content"].get("m.relates_to") or {}
    return relates.get("rel_type") == "m.thread" and relates.get("event_id") == root


async def test_a_thread_is_its_own_conversation_and_an_image_posted_there_reaches_the_task(
    client, task_queue, workspace, tmp_path, synapse
):
    steps = [tool("message", type="result", text="hello in the room"),
             tool("message", type="result", text="a grey plot, `6x4`")]
    alice = await person(synapse, "alice")
    table = matrix_table(synapse, workspace=str(workspace))
    try:
        async with scripted_worker(client, task_queue, steps) as model, \
                gateway(client, task_queue, table, tmp_path, model="gpt-4o"):
            room = await alice.create_room(invite=[AGENT])
            await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
            root = await alice.say(room, "hello")
            await alice.until(lambda: "hello in the room" in alice.bodies(room, AGENT), "the room's answer")

            uploaded, _ = await alice.client.upload(io.BytesIO(PLOT), content_type="image/png", filename="plot.png",
                                                   filesize=len(PLOT))
            assert isinstance(uploaded, UploadResponse), uploaded
            sent = await alice.client.room_send(room, "m.room.message", {
                "msgtype": "m.image", "body": "plot.png", "url": uploaded.content_uri,
                "info": {"mimetype": "image/png", "size": len(PLOT)},
                "m.relates_to": {"rel_type": "m.thread", "event_id": root, "is_falling_back": True,
                                 "m.in_reply_to": {"event_id": root}}})
            assert isinstance(sent, RoomSendResponse), sent
            answer = await alice.until(lambda: next((e for e in alice.notices(room, AGENT)
                                                     if e["content"]["body"] == "a grey plot, `6x4`"), None),
                                       "the thread's answer")
    finally:
        await alice.close()
    assert in_thread(answer, root)  # answered in the thread, not the room
    assert answer["content"]["formatted_body"] == "a grey plot, <code>6x4</code>"  # code shows as code
    room_answer = next(e for e in alice.notices(room, AGENT) if e["content"]["body"] == "hello in the room")
    assert not in_thread(room_answer, root)
    thread_request = model.requests[1]
    assert "hello" not in request_text(thread_request).replace("hello in the room", "")  # the room's history: not here
    [said] = [m["content"] for m in thread_request["messages"] if m["role"] == "user"]
    assert said[0]["text"].startswith("[attached: attachments/plot.png (")
    assert said[1]["type"] == "image_url" and said[1]["image_url"]["url"].startswith("data:image/png;base64,")
    assert (workspace / "attachments" / "plot.png").read_bytes() == PLOT
    model.assert_consumed()


async def test_a_homeserver_429_is_waited_out_and_every_reply_is_posted_once(
    client, task_queue, workspace, tmp_path, synapse
):
    admin = synapse.register("ops", "ops-pass-1", admin=True)
    async with httpx.AsyncClient(base_url=synapse.url) as http:
        login = await http.post("/_matrix/client/v3/login", json={
            "type": "m.login.password", "identifier": {"type": "m.id.user", "user": admin}, "password": "ops-pass-1"})
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        override = f"/_synapse/admin/v1/users/{AGENT}/override_ratelimit"
        alice = await person(synapse, "alice")
        try:
            async with scripted_worker(client, task_queue, []), gateway(client, task_queue, matrix_table(synapse),
                                                                         tmp_path):
                room = await alice.create_room(invite=[AGENT])
                await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
                limited = await http.post(override, headers=headers, json={"messages_per_second": 1, "burst_count": 1})
                assert limited.status_code == 200, limited.text
                for _ in range(3):
                    await alice.say(room, "stop")  # nothing runs: each is answered "Nothing is running."
                await alice.until(lambda: alice.bodies(room, AGENT).count("Nothing is running.") >= 3, "three replies",
                                  timeout_s=90)
                history = await client.get_workflow_handle(
                    conversation_id(ChatRef(channel="matrix", conversation=room))).fetch_history()
        finally:
            await http.delete(override, headers=headers)
            await alice.close()
    assert alice.bodies(room, AGENT).count("Nothing is running.") == 3
    retried = [e.activity_task_started_event_attributes for e in history.events
               if e.HasField("activity_task_started_event_attributes")
               and e.activity_task_started_event_attributes.attempt > 1]
    assert retried, "no delivery met the homeserver's 429"
    failure = json.dumps(retried[0].last_failure.message)
    assert "rate limited" in failure, failure

"""The gateway on a real Synapse: people write in rooms, the agent answers there, and approves
its dangerous calls by the reactions of the room's approvers (issue 31's first "done when");
each answer shows once, in plain words: the progress message becomes it, or goes when the
answer needs more than one message (issue 40)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest

from tests.channels.synapse import PASSWORDS, Synapse, require_synapse

require_synapse()
pytest.importorskip("nio", reason="matrix-nio is not installed: pip install 'durable-agent[channels]'")

from channels.config import ChannelConfig  # noqa: E402
from channels.gateway import Defaults, Gateway  # noqa: E402
from channels.matrix import MatrixAdapter  # noqa: E402
from contracts.channels import ChatRef, ConversationState, conversation_id  # noqa: E402
from fakes.scripted import tool  # noqa: E402
from tests.channels.matrix_users import ChatUser  # noqa: E402
from tests.workflows.harness import scripted_worker  # noqa: E402
from workflows.conversation import ConversationWorkflow  # noqa: E402
from workflows.search_attributes import AGENT_SESSION, AGENT_STATE  # noqa: E402


def matrix_table(synapse: Synapse, **extra) -> ChannelConfig:
    return ChannelConfig.model_validate(dict(
        name="matrix", type="matrix", homeserver=synapse.url, user_id="@agent:localhost", password=PASSWORDS["agent"],
        allowed_users=["@alice:localhost", "@bob:localhost"], approvers=["@alice:localhost"], **extra))


@asynccontextmanager
async def gateway(client, task_queue: str, table: ChannelConfig, data: Path,
                  model: str = "scripted-model") -> AsyncIterator[MatrixAdapter]:
    adapter = MatrixAdapter(table, data / "gateway")
    defaults = Defaults(model=model, provider="openai", task_queue=task_queue, data_dir=data)
    running = asyncio.create_task(Gateway(client, [(table, adapter)], defaults, queue=f"{task_queue}-gw").run())
    try:
        while not adapter.state.sync_file.exists():  # its first sync: from now on
            assert not running.done(), running.exception()
            await asyncio.sleep(0.05)
        yield adapter
    finally:
        if running.done():
            running.result()  # the gateway stopped on its own: why
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)


async def person(synapse: Synapse, name: str) -> ChatUser:
    return await ChatUser(synapse.url, f"@{name}:localhost").login(PASSWORDS[name])


def request_text(request: dict) -> str:
    return json.dumps(request["messages"], ensure_ascii=False)


async def test_a_room_talks_to_the_agent_approves_by_reaction_and_keeps_its_history(
    client, task_queue, workspace, tmp_path, synapse
):
    (workspace / "build").mkdir()
    agent = "@agent:localhost"
    steps = [
        tool("shell", command="rm -rf build"),
        tool("message", type="result", text="removed the build"),
        tool("message", type="result", text="removed the build"),  # after the reminder to verify
        tool("message", type="result", text="I removed the build directory"),
        tool("message", type="result", text="hello from room two"),
    ]
    alice, bob = await person(synapse, "alice"), await person(synapse, "bob")
    table = matrix_table(synapse, workspace=str(workspace))
    try:
        async with scripted_worker(client, task_queue, steps) as model, gateway(client, task_queue, table, tmp_path):
            room = await alice.create_room(invite=[agent, bob.user_id])
            await alice.until(lambda: alice.joined(room, agent), "the agent to join")
            await bob.sync()
            await alice.say(room, "please clean the build")

            approval = await alice.until(
                lambda: next((e for e in alice.notices(room, agent) if "Approval needed" in e["content"]["body"]), None),
                "the approval message")
            assert "rm -rf build" in approval["content"]["body"]
            await bob.react(room, approval["event_id"], "✅")
            await alice.until(lambda: any("may not approve" in b for b in alice.bodies(room, agent)), "bob's refusal")
            assert (workspace / "build").exists(), "a non-approver's reaction ran the call"

            await alice.react(room, approval["event_id"], "✅")
            await alice.until(lambda: "removed the build" in alice.visible(room, agent), "the final answer")
            assert not (workspace / "build").exists()
            bodies = alice.bodies(room, agent)
            assert any(b.startswith("Approved by @alice:localhost") for b in bodies)
            assert any(e.startswith("Approved by @alice:localhost:\nshell: rm -rf build") for e in alice.edits(room, agent))
            progress = [b for b in bodies if b.startswith("⏳")]
            assert progress == ["⏳ step 1: shell rm -rf build"], bodies  # one progress message, in plain words
            seen = alice.visible(room, agent)  # the progress message became the answer: it shows once
            assert seen.count("removed the build") == 1 and not [b for b in seen if b.startswith("⏳")], seen
            assert not [b for b in bodies + alice.edits(room, agent) if "tool ·" in b or "step 2" in b]  # nor the answer's call

            await alice.say(room, "what did you do?")
            await alice.until(lambda: "I removed the build directory" in alice.bodies(room, agent), "the second answer")
            second = request_text(model.requests[3])
            assert "please clean the build" in second and "removed the build" in second and "what did you do?" in second

            other = await alice.create_room(invite=[agent])
            await alice.until(lambda: alice.joined(other, agent), "the agent to join the second room")
            await alice.say(other, "hello")
            await alice.until(lambda: "hello from room two" in alice.bodies(other, agent), "room two's answer")
            fourth = request_text(model.requests[4])
            assert "please clean the build" not in fourth and "what did you do?" not in fourth
            model.assert_consumed()

            first = conversation_id(ChatRef(channel="matrix", conversation=room))
            state = await client.get_workflow_handle(first).query(ConversationWorkflow.conversation,
                                                                  result_type=ConversationState)
            assert state.tasks == 2 and state.running is None
            task = await client.get_workflow_handle(f"{first}-task-1").describe()  # found as any task is
            assert task.typed_search_attributes.get(AGENT_STATE) == "DONE"
            assert task.typed_search_attributes.get(AGENT_SESSION) == f"chat:matrix:{room}"
    finally:
        await alice.close()
        await bob.close()


async def test_a_question_is_answered_in_the_room_and_stop_stops_the_task(
    client, task_queue, workspace, tmp_path, synapse
):
    agent = "@agent:localhost"
    steps = [tool("message", type="ask", text="Which file?"), tool("shell", command="sleep 60")]
    alice = await person(synapse, "alice")
    table = matrix_table(synapse, workspace=str(workspace))
    try:
        async with scripted_worker(client, task_queue, steps) as model, gateway(client, task_queue, table, tmp_path):
            room = await alice.create_room(invite=[agent])
            await alice.until(lambda: alice.joined(room, agent), "the agent to join")
            await alice.say(room, "tidy a file")
            await alice.until(lambda: "Which file?" in alice.bodies(room, agent), "the question")
            await alice.say(room, "notes.md")
            await alice.until(lambda: any("sleep 60" in b for b in alice.bodies(room, agent) + alice.edits(room, agent)),
                              "the command's progress")
            assert "notes.md" in request_text(model.requests[1])
            await alice.say(room, "stop")
            await alice.until(lambda: any(b.startswith("failed: stopped") for b in alice.visible(room, agent)),
                              "the task's end")
            bodies = alice.visible(room, agent)
            assert any(b.startswith("Stopping (asked by @alice:localhost)") for b in bodies)
            assert any("stopped by @alice:localhost in the chat" in b for b in bodies)
            model.assert_consumed()
    finally:
        await alice.close()


async def test_someone_not_allowed_is_ignored_and_a_long_answer_is_split(
    client, task_queue, workspace, tmp_path, synapse
):
    agent = "@agent:localhost"
    long = "hi alice\n\n" + "\n\n".join(f"paragraph {n}: " + "word " * 200 for n in range(65))  # ~65,000 chars
    carol, alice = await person(synapse, "carol"), await person(synapse, "alice")
    table = matrix_table(synapse, workspace=str(workspace))
    try:
        steps = [tool("shell", command="ls"), tool("message", type="result", text=long)]  # ls: progress, no change
        async with scripted_worker(client, task_queue, steps) as model, gateway(client, task_queue, table, tmp_path):
            room = await alice.create_room(invite=[agent, carol.user_id])
            await alice.until(lambda: alice.joined(room, agent), "the agent to join")
            await carol.sync()
            await carol.say(room, "delete everything")
            await alice.say(room, "say hi")
            await alice.until(lambda: any("paragraph 64" in b for b in alice.bodies(room, agent)), "the whole answer")
            await alice.until(lambda: not [b for b in alice.visible(room, agent) if b.startswith("⏳")],
                              "the progress message to go")  # the answer is longer than one message
            assert any(b.startswith("⏳ step 1: shell ls") for b in alice.bodies(room, agent))  # it was there
            pieces = alice.visible(room, agent)
            assert len(pieces) == 3 and all(len(p) <= 30_000 for p in pieces)  # Matrix: 30,000 a message
            assert "".join(pieces).replace("\n", "").replace(" ", "") == long.replace("\n", "").replace(" ", "")
            assert len(model.requests) == 2 and "delete everything" not in request_text(model.requests[0])
            model.assert_consumed()
    finally:
        await alice.close()
        await carol.close()


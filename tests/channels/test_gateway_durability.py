"""The gateway as people run it (``starter.py gateway``), on a real Synapse: SIGKILLed between a
message and its answer and started again, or run twice at once, each message starts one task
and gets one answer (issue 31's second "done when"). Each test first sees the message handed
over twice (two inbound signals in the conversation's history: the restarted gateway read the
batch again, or both gateways read it), then that the conversation, having handled both, ran
one task (issue 41: no sleep stands in for either)."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.channels.synapse import PASSWORDS, Synapse, require_synapse

require_synapse()
pytest.importorskip("nio", reason="matrix-nio is not installed: pip install 'durable-agent[channels]'")

from temporalio.api.enums.v1 import EventType  # noqa: E402
from temporalio.service import RPCError, RPCStatusCode  # noqa: E402

from channels.matrix_session import MatrixState  # noqa: E402
from contracts.channels import INBOUND_SIGNAL, ChatRef, ConversationState, conversation_id  # noqa: E402
from fakes.step import Step  # noqa: E402
from tests.channels.matrix_users import ChatUser  # noqa: E402
from tests.workflows.harness import scripted_worker, signals_handled, wait_until  # noqa: E402
from workflows.conversation import ConversationWorkflow  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent.parent
AGENT = "@agent:localhost"


def answer(text: str, **kw) -> Step:
    return Step(tool_calls=[("message", {"type": "result", "text": text})], **kw)


def channels_file(path: Path, synapse: Synapse) -> Path:
    path.write_text(f"""
[matrix]
homeserver = "{synapse.url}"
user_id = "{AGENT}"
access_token = "{{{{secret:MATRIX_TOKEN}}}}"
allowed_users = ["@alice:localhost"]
approvers = ["@alice:localhost"]
""")
    return path


def spawn_gateway(client, task_queue: str, config: Path, data: Path, token: str) -> subprocess.Popen:
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
               AGENT_TASK_QUEUE=task_queue, AGENT_MODEL="scripted-model", AGENT_DATA_DIR=str(data),
               AGENT_SECRET_MATRIX_TOKEN=token)
    return subprocess.Popen([sys.executable, "starter.py", "gateway", "--config", str(config), "--queue",
                             f"{task_queue}-gw"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                            stderr=open(data.parent / f"{data.name}.stderr", "wb"))


def token_file(data: Path, synapse: Synapse) -> Path:
    return MatrixState(data / "gateway", synapse.url, AGENT).sync_file


def kill(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)


async def agent_token(synapse: Synapse) -> str:
    bot = await ChatUser(synapse.url, AGENT).login(PASSWORDS["agent"])
    token = bot.client.access_token
    await bot.close()
    return token


async def started(proc: subprocess.Popen, data: Path, synapse: Synapse) -> None:
    await wait_until(lambda: token_file(data, synapse).exists() or proc.poll() is not None, 60)
    assert proc.poll() is None, (data.parent / f"{data.name}.stderr").read_text()[-3000:]


def conversation(client, room: str):
    return client.get_workflow_handle(conversation_id(ChatRef(channel="matrix", conversation=room)))


async def tasks_of(client, room: str) -> ConversationState:
    return await conversation(client, room).query(ConversationWorkflow.conversation, result_type=ConversationState)


async def inbound_signals(handle) -> int:
    """How many messages the conversation was handed (0 before the first started it)."""
    try:
        events = [e async for e in handle.fetch_history_events()]
    except RPCError as err:
        if err.status != RPCStatusCode.NOT_FOUND:
            raise
        return 0
    return sum(1 for e in events if e.event_type == EventType.EVENT_TYPE_WORKFLOW_EXECUTION_SIGNALED
               and e.workflow_execution_signaled_event_attributes.signal_name == INBOUND_SIGNAL)


async def handed_over(client, room: str, times: int, timeout_s: float = 60.0) -> None:
    """Returns once the room's conversation was handed a message ``times`` times in all (its
    history's inbound signals), and handled them: never more."""
    handle, deadline = conversation(client, room), asyncio.get_running_loop().time() + timeout_s
    while (seen := await inbound_signals(handle)) < times:
        assert asyncio.get_running_loop().time() < deadline, f"handed over {seen} times, not {times}"
        await asyncio.sleep(0.1)
    assert seen == times
    await signals_handled(handle)


async def test_a_gateway_killed_before_it_committed_its_position_answers_once(client, task_queue, tmp_path, synapse):
    config, data = channels_file(tmp_path / "channels.toml", synapse), tmp_path / "data"
    token = await agent_token(synapse)
    alice = await ChatUser(synapse.url, "@alice:localhost").login(PASSWORDS["alice"])
    procs = []
    try:
        async with scripted_worker(client, task_queue, [answer("the one answer", hold=True)]) as model:
            procs.append(spawn_gateway(client, task_queue, config, data, token))
            await started(procs[0], data, synapse)
            room = await alice.create_room(invite=[AGENT])
            await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
            await asyncio.sleep(1)  # the join's own sync batch committed
            before = token_file(data, synapse).read_text()
            await alice.say(room, "answer once")
            await wait_until(lambda: len(model.requests) == 1, 60)  # Temporal has it: the task asked the model
            kill(procs[0])
            token_file(data, synapse).write_text(before)  # as if killed before it committed the batch
            procs.append(spawn_gateway(client, task_queue, config, data, token))
            await started(procs[1], data, synapse)
            await handed_over(client, room, 2)  # the restarted gateway read the batch again
            model.release()
            await alice.until(lambda: "the one answer" in alice.bodies(room, AGENT), "the answer")
            await alice.sync()
            assert alice.bodies(room, AGENT).count("the one answer") == 1
            assert len(model.requests) == 1
            state = await tasks_of(client, room)
            assert state.tasks == 1 and state.running is None
    finally:
        for proc in procs:
            kill(proc)
        await alice.close()


async def test_two_gateways_at_once_answer_once(client, task_queue, tmp_path, synapse):
    config = channels_file(tmp_path / "channels.toml", synapse)
    token = await agent_token(synapse)
    alice = await ChatUser(synapse.url, "@alice:localhost").login(PASSWORDS["alice"])
    procs = []
    try:
        async with scripted_worker(client, task_queue, [answer("only once")]) as model:
            for n in (1, 2):
                data = tmp_path / f"data{n}"
                procs.append(spawn_gateway(client, task_queue, config, data, token))
                await started(procs[-1], data, synapse)
            room = await alice.create_room(invite=[AGENT])
            await alice.until(lambda: alice.joined(room, AGENT), "the agent to join")
            await alice.say(room, "answer once")
            await handed_over(client, room, 2)  # each gateway read it and handed it over
            await alice.until(lambda: "only once" in alice.bodies(room, AGENT), "the answer")
            await alice.sync()
            assert alice.bodies(room, AGENT).count("only once") == 1
            assert len(model.requests) == 1
            assert (await tasks_of(client, room)).tasks == 1
            model.assert_consumed()
    finally:
        for proc in procs:
            kill(proc)
        await alice.close()

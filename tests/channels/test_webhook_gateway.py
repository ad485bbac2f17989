"""The webhook channel through the gateway: signed calls in, signed callbacks out, a replayed or
unsigned call refused, the same event id twice handled once; each message handed over or dropped
is one line on the gateway's console (``starter.py gateway``'s stderr)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
from structlog.testing import capture_logs
from temporalio.api.enums.v1 import EventType
from temporalio.worker import Replayer

from channels.config import ChannelConfig
from channels.gateway import Defaults, Gateway
from channels.webhook import WebhookAdapter, signature_problem, signed_headers
from cli.task_schedules import create_task_schedule, delete_task_schedule, trigger_task_schedule
from contracts.channels import conversation_id
from fakes.scripted import tool
from fakes.step import Step
from runtime.secrets import SecretStore
from temporal.plugin import AgentPlugin
from temporal.server import port_open
from tests.ports import free_port
from tests.workflows.harness import make_input, scripted_worker, wait_until
from workflows.conversation import ConversationWorkflow
from workflows.task import AgentTaskWorkflow

SECRET = "webhook-secret-1"



class Callbacks:
    """A local HTTP server that records the agent's signed callbacks."""

    def __init__(self, busy_first: bool = False) -> None:
        self.received: list[tuple[dict, dict]] = []
        self.busy = busy_first  # answer the first call 429, Retry-After: 1
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers["Content-Length"]))
                outer.received.append((dict(self.headers), json.loads(body)))
                assert signature_problem(SECRET, dict(self.headers.items()), body) is None
                if outer.busy:
                    outer.busy = False
                    self.send_response(429)
                    self.send_header("Retry-After", "1")
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(json.dumps({"id": f"msg-{len(outer.received)}"}).encode())

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@asynccontextmanager
async def webhook_gateway(client, task_queue: str, workspace: Path, data: Path,
                          callbacks: Callbacks) -> AsyncIterator[str]:
    """The gateway with one webhook channel, ``hooks`` (``lead`` approves); yields its inbound URL."""
    port = free_port()
    table = ChannelConfig.model_validate(dict(
        name="hooks", type="webhook", secret=SECRET, port=port, callback_url=callbacks.url, allowed_users=["ci-bot"],
        approvers=["lead"], workspace=str(workspace)))
    adapter = WebhookAdapter(table)
    defaults = Defaults(model="scripted-model", provider="openai", task_queue=task_queue, data_dir=data,
                        secrets=SecretStore({"DEPLOY_TOKEN": "tok-5e3c7a9b"}))
    running = asyncio.create_task(Gateway(client, [(table, adapter)], defaults, queue=f"{task_queue}-gw").run())
    try:
        await wait_until(adapter.endpoint.ready.is_set, 30)
        yield f"http://127.0.0.1:{port}/"
    finally:
        running.cancel()
        await asyncio.gather(running, return_exceptions=True)
        callbacks.server.shutdown()


def answers(callbacks: Callbacks) -> list[tuple[dict, dict]]:
    return [(headers, body) for headers, body in callbacks.received if body["kind"] == "answer"]


async def child_end_handled(handle, timeout_s: float = 30.0) -> None:
    """Returns once the conversation's history has its task's end and a workflow task completed
    after it: the conversation has handled it, so its history is whole for the replay."""
    deadline = asyncio.get_running_loop().time() + timeout_s
    while True:
        kinds = [e.event_type async for e in handle.fetch_history_events()]
        ended = [i for i, k in enumerate(kinds) if k == EventType.EVENT_TYPE_CHILD_WORKFLOW_EXECUTION_COMPLETED]
        if ended and EventType.EVENT_TYPE_WORKFLOW_TASK_COMPLETED in kinds[ended[-1]:]:
            return
        assert asyncio.get_running_loop().time() < deadline, "the conversation did not handle its task's end"
        await asyncio.sleep(0.05)


def post(url: str, event: dict, *, secret: str = SECRET, now: float | None = None) -> httpx.Response:
    body = json.dumps(event).encode()
    return httpx.post(url, content=body, headers=signed_headers(secret, body, now))


async def test_a_signed_webhook_call_gets_one_signed_answer_and_bad_calls_are_refused(
    client, task_queue, workspace, tmp_path
):
    """Also: the callback's first answer is 429 (waited out by Temporal's retry), and a secret
    in the message never reaches the model."""
    callbacks = Callbacks(busy_first=True)
    event = {"id": "evt-1", "conversation": "build-42", "author": "ci-bot",
             "text": "summarize the build (deploy token tok-5e3c7a9b)"}
    async with scripted_worker(client, task_queue, [tool("message", type="result", text="all green")]) as model, \
            webhook_gateway(client, task_queue, workspace, tmp_path, callbacks) as url:
        with capture_logs() as logs:
            refused = await asyncio.to_thread(post, url, event, secret="wrong")
            stale = await asyncio.to_thread(post, url, event, now=time.time() - 3600)
            stranger = await asyncio.to_thread(post, url, {**event, "id": "evt-0", "author": "someone"})
            assert (refused.status_code, stale.status_code, stranger.status_code) == (401, 401, 403)
            first = await asyncio.to_thread(post, url, event)
            again = await asyncio.to_thread(post, url, event)  # the caller retried: the same event
            assert first.status_code == again.status_code == 202
        # One console line per message: the stranger's dropped, and each hand-over (the retry's
        # too: the conversation drops the repeat), the secret redacted before it is shown.
        lines = [(entry["event_id"], entry["event"]) for entry in logs if entry.get("log_level") == "info"]
        assert lines == [
            ("evt-0", "message dropped: hooks:build-42 · someone · “summarize the build (deploy token tok-5e3c7a9b)” "
                      "(not in allowed_users)"),
            *[("evt-1", "message handed over: hooks:build-42 · ci-bot · “summarize the build (deploy token "
                        "{{secret:DEPLOY_TOKEN}})” → conversation-hooks:build-42")] * 2,
        ]
        await wait_until(lambda: len(answers(callbacks)) == 2, 60)  # the first try, 429'd, and the retry
        conversation = conversation_id("hooks:build-42")
        await client.get_workflow_handle(f"{conversation}-task-1").result()
        await child_end_handled(client.get_workflow_handle(conversation))
        for workflow_id in (conversation, f"{conversation}-task-1"):  # both replay as recorded
            history = await client.get_workflow_handle(workflow_id).fetch_history()
            replayed = await Replayer(workflows=[], plugins=[AgentPlugin.replaying(ConversationWorkflow, AgentTaskWorkflow)]).replay_workflow(history)
            assert replayed.replay_failure is None, workflow_id
    (_, refused_answer), (headers, answer) = answers(callbacks)
    assert refused_answer == answer and answer["text"] == "all green" and answer["chat"]["conversation"] == "build-42"
    assert headers["Idempotency-Key"] == answer["key"]
    assert len(model.requests) == 1
    sent = json.dumps(model.requests[0])
    assert "tok-5e3c7a9b" not in sent and "{{secret:DEPLOY_TOKEN}}" in sent
    keys = [body["key"] for _, body in callbacks.received]
    assert keys[0] == keys[1] and len(keys) == len(set(keys)) + 1  # the 429'd message, sent again once
    model.assert_consumed()


@asynccontextmanager
async def scheduled_for(client, task_queue: str, workspace: Path, url: str, callbacks: Callbacks,
                        chat: str) -> AsyncIterator[str]:
    """After a first message has made chat ``chat``'s conversation, a schedule whose task
    reports there, triggered once: yields the task's id; the schedule goes after."""
    assert (await asyncio.to_thread(post, url, {"id": f"{chat}-1", "conversation": chat, "author": "ci-bot",
                                                "text": "hello"})).status_code == 202
    await wait_until(lambda: answers(callbacks), 60)
    name = f"{chat}-{task_queue}"
    task = make_input(workspace, "report on the build", conversation=conversation_id(f"hooks:{chat}"))
    await create_task_schedule(client, name, "0 3 * * *", task, task_queue=task_queue)
    try:
        yield await trigger_task_schedule(client, name)
    finally:
        await delete_task_schedule(client, name)


async def test_a_scheduled_task_that_names_the_chat_posts_its_result_there(client, task_queue, workspace, tmp_path):
    callbacks = Callbacks()
    steps = [tool("message", type="result", text="hello"), tool("message", type="result", text="nightly: all green")]
    async with scripted_worker(client, task_queue, steps) as model, \
            webhook_gateway(client, task_queue, workspace, tmp_path, callbacks) as url, \
            scheduled_for(client, task_queue, workspace, url, callbacks, "nightly") as started:
        await wait_until(lambda: len(answers(callbacks)) == 2, 60)
    body = answers(callbacks)[1][1]
    assert body["chat"]["conversation"] == "nightly"
    assert body["text"] == f"Task {started}:\nnightly: all green"
    model.assert_consumed()


async def test_a_scheduled_tasks_question_is_posted_and_the_next_message_answers_it(
        client, task_queue, workspace, tmp_path):
    callbacks = Callbacks()
    steps = [tool("message", type="result", text="hello"), tool("message", type="ask", text="Which branch?"),
             tool("message", type="result", text="nightly on main: green")]
    async with scripted_worker(client, task_queue, steps) as model, \
            webhook_gateway(client, task_queue, workspace, tmp_path, callbacks) as url:
        async with scheduled_for(client, task_queue, workspace, url, callbacks, "asked") as started:
            await wait_until(lambda: any(body["kind"] == "question" for _, body in callbacks.received), 60)
            reply = {"id": "evt-q2", "conversation": "asked", "author": "ci-bot", "text": "main"}
            assert (await asyncio.to_thread(post, url, reply)).status_code == 202
            await wait_until(lambda: len(answers(callbacks)) == 2, 60)
        state = await client.get_workflow_handle(conversation_id("hooks:asked")).query(
            ConversationWorkflow.conversation)
    question = next(body["text"] for _, body in callbacks.received if body["kind"] == "question")
    assert question.startswith(f"Task {started} asks:\nWhich branch?")
    assert answers(callbacks)[1][1]["text"] == f"Task {started}:\nnightly on main: green"
    assert model.requests[2]["messages"][-1]["content"] == "main"  # the answer, to that task
    assert state.tasks == 1 and state.asking is None  # no task of its own was started for the answer
    model.assert_consumed()


async def test_a_message_for_a_task_that_is_gone_starts_the_next_task(client, task_queue, workspace, tmp_path):
    callbacks = Callbacks()
    steps = [Step(tool_calls=[("message", {"type": "result", "text": "never said"})], hold=True),
             tool("message", type="result", text="here again")]
    first = {"id": "evt-a", "conversation": "ops", "author": "ci-bot", "text": "a long job"}
    async with scripted_worker(client, task_queue, steps) as model, \
            webhook_gateway(client, task_queue, workspace, tmp_path, callbacks) as url:
        assert (await asyncio.to_thread(post, url, first)).status_code == 202
        await wait_until(lambda: len(model.requests) == 1, 60)
        task_id = f"{conversation_id('hooks:ops')}-task-1"
        await client.get_workflow_handle(task_id).terminate("an operator ended it")
        assert (await asyncio.to_thread(post, url, {**first, "id": "evt-b", "text": "are you there?"})).status_code == 202
        await wait_until(lambda: answers(callbacks), 60)
        model.release()
    texts = [body["text"] for _, body in callbacks.received]
    assert f"Task {task_id} is no longer running." in texts
    assert [body["text"] for _, body in answers(callbacks)] == ["here again"]
    assert "are you there?" in json.dumps(model.requests[1])


async def test_an_approver_refuses_a_call_by_replying_to_the_approval_message(client, task_queue, workspace, tmp_path):
    callbacks = Callbacks()
    (workspace / "build").mkdir()
    steps = [tool("shell", command="rm -rf build"), tool("message", type="result", text="kept it")]
    event = {"id": "evt-x", "conversation": "cleanup", "author": "ci-bot", "text": "clean up"}
    async with scripted_worker(client, task_queue, steps) as model, \
            webhook_gateway(client, task_queue, workspace, tmp_path, callbacks) as url:
        assert (await asyncio.to_thread(post, url, event)).status_code == 202
        await wait_until(lambda: any(body["kind"] == "approval" for _, body in callbacks.received), 60)
        number = next(n for n, (_, body) in enumerate(callbacks.received, 1) if body["kind"] == "approval")
        assert [b["action"] for b in callbacks.received[number - 1][1]["buttons"]] == ["approve", "deny"]
        decision = {"id": "evt-y", "conversation": "cleanup", "author": "lead", "reaction": "deny",
                    "reply_to": f"msg-{number}"}  # the id the callback gave the approval message
        assert (await asyncio.to_thread(post, url, decision)).status_code == 202
        await wait_until(lambda: answers(callbacks), 60)
    texts = [body["text"] for _, body in callbacks.received]
    assert "Refused by lead: shell: rm -rf build" in texts
    assert (workspace / "build").exists()
    assert "[denied]" in json.dumps(model.requests[1]) and "lead (hooks)" in json.dumps(model.requests[1])
    assert [body["text"] for _, body in answers(callbacks)] == ["kept it"]


async def test_the_gateway_command_shows_one_line_per_message_on_its_console(client, task_queue, tmp_path):
    """``starter.py gateway`` as people run it: a message handed over and one dropped are one
    human line each on its stderr, with the chat, the sender, the text's start and where it went."""
    port = free_port()
    config = tmp_path / "channels.toml"
    config.write_text(f"""
[hooks]
type = "webhook"
secret = "{{{{secret:HOOK}}}}"
port = {port}
allowed_users = ["ci-bot"]
""")
    env = dict(os.environ, TEMPORAL_ADDRESS=client.service_client.config.target_host, TEMPORAL_NAMESPACE="default",
               AGENT_TASK_QUEUE=task_queue, AGENT_MODEL="scripted-model", AGENT_DATA_DIR=str(tmp_path / "data"),
               AGENT_SECRET_HOOK=SECRET)
    env.pop("AGENT_LOG_LEVEL", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "starter.py", "gateway", "--config", str(config), "--queue", f"{task_queue}-gw",
        cwd=Path(__file__).resolve().parents[2], env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE)
    try:
        await wait_until(lambda: port_open("127.0.0.1", port) or proc.returncode is not None, 60)
        assert proc.returncode is None
        url = f"http://127.0.0.1:{port}/"
        text = "please   summarize\nthe build of main, and say which tests failed and why they failed today"
        said = await asyncio.to_thread(post, url, {"id": "evt-9", "conversation": "build-9", "author": "ci-bot",
                                                   "text": text})
        stranger = await asyncio.to_thread(post, url, {"id": "evt-8", "conversation": "build-9", "author": "eve",
                                                       "text": "hi"})
        assert (said.status_code, stranger.status_code) == (202, 403)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGINT)
        _, err_b = await asyncio.wait_for(proc.communicate(), 60)
    err = err_b.decode()
    events = [json.loads(line)["event"] for line in err.splitlines() if line.startswith("{")]
    assert events == [
        "message handed over: hooks:build-9 · ci-bot · “please summarize the build of main, and say which tests "
        "fai…” → conversation-hooks:build-9",  # the text's start, on one line
        "message dropped: hooks:build-9 · eve · “hi” (not in allowed_users)",
    ], err

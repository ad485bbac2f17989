"""Record a chat conversation's history for the replay test (``test_conversation_replay.py``).

A conversation (``workflows/conversation.py``) is long-lived and takes patches of its own
(docs/patches.md, "The conversation workflow"), so its histories are kept apart, under
``tests/histories/conversation/``, one per patch state: recorded before a patch (the code at
that commit, checked out beside this one) and after it. The scenario goes through every
branch a patch touched so far: a message starts a task whose dangerous call waits, an
approver's reaction decides it, the answer comes; a scheduled task that reports here asks a
question and the next message answers it; ``stop`` with nothing running.

    .venv/bin/python -m tests.workflows.conversation_scenario NAME
    # the code before a change: git worktree add /tmp/before <commit>, then from there
    #   PYTHONPATH=/tmp/before .venv/bin/python /path/to/this/file NAME --out /path/to/histories
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from temporalio.client import Client

from cli.task_schedules import create_task_schedule, delete_task_schedule, trigger_task_schedule
from contracts.channels import conversation_id
from fakes.scripted import tool
from temporal.server import start_local_env
from tests.channels.test_webhook_gateway import Callbacks, answers, post, webhook_gateway
from tests.workflows.harness import make_input, scripted_worker, wait_until

HISTORIES = Path(__file__).resolve().parents[1] / "histories" / "conversation"
CHAT = "replayed"


def kinds(callbacks: Callbacks, kind: str) -> list[dict]:
    return [body for _, body in callbacks.received if body["kind"] == kind]


async def record(client: Client, task_queue: str, workspace: Path, data: Path) -> str:
    """Run the scenario; the conversation's history as JSON."""
    (workspace / "build").mkdir()
    steps = [tool("shell", command="rm -rf build"), tool("message", type="result", text="removed"),
             tool("message", type="result", text="removed, and checked"),  # after the reminder to verify
             tool("message", type="ask", text="Which branch?"), tool("message", type="result", text="main: green")]
    callbacks = Callbacks()
    say = {"conversation": CHAT, "author": "ci-bot"}
    async with scripted_worker(client, task_queue, steps) as model, \
            webhook_gateway(client, task_queue, workspace, data, callbacks) as url:
        assert (await asyncio.to_thread(post, url, {**say, "id": "r1", "text": "clean the build"})).status_code == 202
        await wait_until(lambda: kinds(callbacks, "approval"), 60)
        number = next(n for n, (_, body) in enumerate(callbacks.received, 1) if body["kind"] == "approval")
        decision = {**say, "id": "r2", "author": "lead", "reaction": "approve", "reply_to": f"msg-{number}"}
        assert (await asyncio.to_thread(post, url, decision)).status_code == 202
        await wait_until(lambda: answers(callbacks), 60)
        name = f"{CHAT}-{task_queue}"
        task = make_input(workspace, "report on the build", conversation=conversation_id(f"hooks:{CHAT}"))
        await create_task_schedule(client, name, "0 3 * * *", task, task_queue=task_queue)
        try:
            await trigger_task_schedule(client, name)
            await wait_until(lambda: len(model.requests) == 4, 60)  # the scheduled task asked
            await asyncio.sleep(2)  # its question reached the conversation (or, before the patch, did not)
            assert (await asyncio.to_thread(post, url, {**say, "id": "r3", "text": "main"})).status_code == 202
            await wait_until(lambda: len(model.requests) == 5, 60)
            await wait_until(lambda: len(answers(callbacks)) == 2, 60)
        finally:
            await delete_task_schedule(client, name)
        assert (await asyncio.to_thread(post, url, {**say, "id": "r4", "text": "stop"})).status_code == 202
        await wait_until(lambda: any(body["text"] == "Nothing is running." for _, body in callbacks.received), 60)
    history = await client.get_workflow_handle(conversation_id(f"hooks:{CHAT}")).fetch_history()
    return history.to_json()


async def main(name: str, out: Path) -> None:
    env = await start_local_env()
    try:
        with tempfile.TemporaryDirectory() as root:
            (Path(root) / "ws").mkdir()
            body = await record(env.client, "record-conversation", Path(root) / "ws", Path(root))
    finally:
        await env.shutdown()
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{name}.json").write_text(body)
    print(f"recorded {out / name}.json")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description="Record a conversation's history for the replay test.")
    parser.add_argument("name", help="the file's name: what the code it ran on had, e.g. before-2026-11-27")
    parser.add_argument("--out", type=Path, default=HISTORIES)
    opts = parser.parse_args()
    asyncio.run(main(opts.name, opts.out))

"""``interject ID TEXT`` (also ``reply``): send a task a message; it cuts off what is running.
With a worker answering, the message is an update the task refuses once it has ended (a task
that is closing reads no more); with none, a signal, durable in the history: it takes effect
when a worker runs the task."""

from __future__ import annotations

import argparse

from temporalio.client import WorkflowUpdateFailedError

from cli.background import connect
from cli.hints import invoked
from cli.tasks import MAX_INTERJECTION, UserError, running, who
from cli.workers import worker_absence
from contracts.task import Interjection
from runtime.secrets import SecretStore
from workflows.task import AgentTaskWorkflow


def register(subparsers: argparse._SubParsersAction) -> None:
    for name in ("interject", "reply"):
        s = subparsers.add_parser(name, help="send the task a message (cuts off what is running)")
        s.add_argument("id")
        s.add_argument("text")
        s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    client = await connect(args.settings)
    desc = await running(client, args.id)
    if len(args.text.encode()) > MAX_INTERJECTION:
        raise UserError(f"the message is {len(args.text.encode()):,} bytes; the limit is {MAX_INTERJECTION:,}: "
                        "save it in a file in the workspace and point the task at it")
    text = SecretStore.from_settings(args.settings.secrets).redact(args.text)
    handle, message = client.get_workflow_handle(args.id), Interjection(text=text, sent_by=who())
    absent = await worker_absence(client, args.id, desc.task_queue)
    if absent:
        await handle.signal(AgentTaskWorkflow.interject, message)  # durable: it waits in the history for a worker
        print(f"{absent}: the message was delivered to {args.id} and takes effect when a worker starts "
              f"({invoked('worker', args.settings.temporal)})")
        return 0
    try:  # an update: a task that has ended (and is closing) refuses it, so it is never taken unread
        await handle.execute_update(AgentTaskWorkflow.interject_checked, message)
    except WorkflowUpdateFailedError as err:
        reason = getattr(err.cause, "message", "") or str(err.cause)
        raise UserError(f"{args.id} did not take the message: {reason}") from None
    print(f"message delivered to {args.id}")
    return 0

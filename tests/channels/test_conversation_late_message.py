"""A message that reaches the running task as it finishes (after the task took what it had not
read for its end report) is not lost: the task's end names the messages it heard, and the
conversation starts the next task with any it handed over that the task did not hear
(issue 41, item 5). The task is played by a workflow that ends exactly in that window."""

from __future__ import annotations

import asyncio

from temporalio import activity, workflow
from temporalio.service import RPCError
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from contracts.channels import (
    DELIVER_ACTIVITY,
    INBOUND_SIGNAL,
    TASK_REPORT_SIGNAL,
    ChatRef,
    ConversationInput,
    ConversationState,
    Delivered,
    InboundMessage,
    OutboundMessage,
    TaskReport,
    conversation_id,
)
from contracts.task import TASK_WORKFLOW, Interjection, TaskInput
from workflows.conversation import ConversationWorkflow


@workflow.defn(name=TASK_WORKFLOW)
class FinishingTask:
    """Its first run ends once a message comes, reporting it unheard: as a real task does when
    the message lands after its end report was taken. Any other ends at once."""

    def __init__(self) -> None:
        self.got: list[Interjection] = []

    @workflow.signal(name="interject")
    def interject(self, message: Interjection) -> None:
        self.got.append(message)

    @workflow.run
    async def run(self, task: TaskInput) -> str:
        if task.instruction == "first":
            await workflow.wait_condition(lambda: bool(self.got))
        assert task.conversation is not None
        report = TaskReport(task_id=workflow.info().workflow_id, kind="ended", text=f"done: {task.instruction}",
                            heard=[])
        await workflow.get_external_workflow_handle(task.conversation).signal(TASK_REPORT_SIGNAL, report)
        return "ok"


async def test_a_message_that_lands_as_the_task_finishes_starts_the_next_task(client, task_queue, workspace):
    said: list[str] = []

    @activity.defn(name=DELIVER_ACTIVITY)
    async def deliver(message: OutboundMessage) -> Delivered:
        said.append(message.text)
        return Delivered(message_ids=[f"m{len(said)}"])

    chat = ChatRef(channel="hooks", conversation=f"late-{task_queue}")
    inp = ConversationInput(chat=chat, session=f"chat:{chat.key}", workspace=str(workspace), model="scripted-model",
                            task_queue=task_queue)
    first = InboundMessage(event_id="e1", chat=chat, author="ci-bot", text="first")
    async with Worker(client, task_queue=task_queue, workflows=[ConversationWorkflow, FinishingTask],
                      activities=[deliver], workflow_runner=UnsandboxedWorkflowRunner()):
        conversation = await client.start_workflow(
            ConversationWorkflow.run, inp, id=conversation_id(chat), task_queue=task_queue,
            start_signal=INBOUND_SIGNAL, start_signal_args=[first])
        async with asyncio.timeout(30):
            while True:  # the first task runs
                try:
                    await client.get_workflow_handle(f"{conversation.id}-task-1").describe()
                    break
                except RPCError:
                    await asyncio.sleep(0.05)
            await conversation.signal(INBOUND_SIGNAL, InboundMessage(event_id="e2", chat=chat, author="ci-bot",
                                                                     text="second"))
            # The first task's end is handled, then "second" (unheard) starts the next task and is
            # answered; lost, it never is and the timeout fails the test. (Nothing running and
            # nothing pending is no barrier: that holds while the first answer is delivered.)
            while "done: second" not in said:
                await asyncio.sleep(0.05)
            state = await conversation.query(ConversationWorkflow.conversation, result_type=ConversationState)
        await conversation.terminate()
    assert state.tasks == 2, said  # "second" came after the first task's report was taken: it started the next
    assert said == ["done: first", "done: second"]

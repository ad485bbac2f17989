"""A chat conversation (channel + conversation id) as a session: a long-lived entity workflow.

The gateway signals-with-start it (``inbound``) for every message, under an id derived from the
chat, so however many gateways run there is one per chat. It handles each event once (a bounded
set of event ids, carried across continue-as-new), hands a message to the task that runs (an
interjection, which also answers its question) or starts the session's next task as a child that
outlives it (after having the gateway fetch the files a message named but did not carry:
Slack's), turns the task's reports (``task_report``: progress, an approval waiting, a
question, the end) into chat messages sent by the ``deliver`` activity (the progress message
ends as the answer, so each answer shows once), and decides approvals
from reactions by the chat's approvers. Why an entity workflow and not a routing rule:
docs/channels.md. Deterministic: no I/O.
"""

from __future__ import annotations

from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import FailureError
from temporalio.workflow import ParentClosePolicy

with workflow.unsafe.imports_passed_through():
    from contracts.attachments import FETCH_ATTACHMENTS_ACTIVITY, Attachment, FetchAttachments
    from contracts.channels import (
        CONVERSATION_WORKFLOW,
        DELIVER_ACTIVITY,
        INBOUND_SIGNAL,
        TASK_REPORT_SIGNAL,
        ApprovalShown,
        Button,
        ConversationInput,
        ConversationState,
        Delivered,
        InboundMessage,
        OutboundMessage,
        TaskReport,
    )
    from contracts.task import TASK_WORKFLOW, ApprovalDecision, ApprovalMode, Interjection, TaskInput
    from workflows.search_attributes import initial_search_attributes

SEEN_KEPT = 1000  # event ids remembered: a redelivery comes within the last few
EVENTS_PER_RUN = 500  # messages and reports handled before continuing as new
DELIVER_TIMEOUT = timedelta(minutes=1)
# Rate limits are waited out by these retries (the activity raises with the delay asked for).
DELIVER_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=20)
FETCH_TIMEOUT = timedelta(minutes=2)  # a few files of up to 1 MB from the platform
FETCH_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=5)
STOP_WORDS = ("stop", "/stop", "!stop")
APPROVE_HINT = "Tap ✅ to run it or ❌ to refuse it"  # buttons (Slack, Telegram), reactions (Matrix)
# Runs that reach a changed command record this marker (docs/patches.md, "The conversation"):
# a decided approval message is edited to its decision, without its buttons; a question from
# a task this conversation did not start is posted, and the next message answers it.
DECISIONS_PATCH = "conversation-2026-11-27"
# And from here: a task's progress message is edited into its answer (or deleted where the answer
# needs more than one message), and the message tool's call shows no progress of its own.
ANSWER_PATCH = "conversation-2026-11-28"


@workflow.defn(name=CONVERSATION_WORKFLOW)
class ConversationWorkflow:
    @workflow.init
    def __init__(self, inp: ConversationInput) -> None:
        self.inp = inp
        self.state: ConversationState = inp.state
        self.reports: list[TaskReport] = []
        self.handled = 0
        # The messages handed to the running task, until its end says which it heard. Not
        # carried across continue-as-new: they are in this run's history already.
        self.told: list[InboundMessage] = []

    @workflow.signal(name=INBOUND_SIGNAL)
    def inbound(self, message: InboundMessage) -> None:
        if message.event_id in self.state.seen:  # delivered twice (a gateway restarted, or two ran): handled once
            workflow.logger.info("ignored a message: %s was handled already", message.event_id)
            return
        self.state.seen = [*self.state.seen[-(SEEN_KEPT - 1):], message.event_id]
        self.state.pending.append(message)

    @workflow.signal(name=TASK_REPORT_SIGNAL)
    def task_report(self, report: TaskReport) -> None:
        self.reports.append(report)

    @workflow.query
    def conversation(self) -> ConversationState:
        return self.state

    @workflow.run
    async def run(self, inp: ConversationInput) -> None:
        while self.handled < EVENTS_PER_RUN and not workflow.info().is_continue_as_new_suggested():
            await workflow.wait_condition(lambda: bool(self.reports or self.state.pending))
            while self.reports:
                await self._on_report(self.reports.pop(0))
                self.handled += 1
            if self.state.pending:
                await self._on_message(self.state.pending.pop(0))
                self.handled += 1
        await workflow.wait_condition(workflow.all_handlers_finished)
        while self.reports:  # reports are not carried: handled before the run ends
            await self._on_report(self.reports.pop(0))
        workflow.continue_as_new(inp.model_copy(update={"state": self.state}))

    # ---- a person's message --------------------------------------------------------

    async def _on_message(self, message: InboundMessage) -> None:
        state = self.state
        message = await self._with_files(message)
        if message.reaction in ("approve", "deny"):
            await self._decide(message)
        elif message.reaction == "stop" or message.text.strip().lower() in STOP_WORDS:
            if state.running is None:
                await self._say("Nothing is running.")
                return
            if await self._tell(state.running, "stop", f"stopped by {message.author} in the chat"):
                await self._say(f"Stopping (asked by {message.author}).")
        elif (to := state.running or self._asking()) is not None and await self._tell(to, "interject", Interjection(
                text=message.text, sent_by=message.author, attachments=message.attachments, ref=message.event_id)):
            if to == state.asking:
                state.asking = None  # answered
            else:
                self.told.append(message)
            return
        elif message.text.strip() or message.attachments:
            await self._start_task(message)
        else:
            workflow.logger.info("ignored a message: %s has no text and no file", message.event_id)

    async def _with_files(self, message: InboundMessage) -> InboundMessage:
        """``message`` with the bytes of the files it named but did not carry (a Slack event is
        answered before they are fetched). Only such messages run the activity, and no history
        recorded before it has one, so it needs no patch."""
        later = [a for a in message.attachments if a.file_id]
        if not later:
            return message
        try:
            attachments = await workflow.execute_activity(
                FETCH_ATTACHMENTS_ACTIVITY,
                FetchAttachments(channel=self.inp.chat.channel, attachments=message.attachments),
                result_type=list[Attachment], start_to_close_timeout=FETCH_TIMEOUT, retry_policy=FETCH_RETRY,
                summary=f"attachments · fetch {len(later)}",
            )
        except FailureError:  # the message still goes, its files by name (the task is told they did not come)
            workflow.logger.warning("the files of %s were not fetched", message.event_id)
            return message
        return message.model_copy(update={"attachments": attachments})

    async def _decide(self, message: InboundMessage) -> None:
        shown = self.state.approval
        if shown is None or message.reply_to != shown.message_id:
            workflow.logger.info("ignored a message: %s reacts to no call waiting here", message.event_id)
            return  # a reaction on another message: not a decision
        if not message.approver:
            await self._say(f"{message.author} may not approve calls here; the call still waits.",
                            reply_to=shown.message_id)
            return
        approved = message.reaction == "approve"
        decision = ApprovalDecision(approved=approved, call_id=shown.call_id, digest=shown.digest,
                                    decided_by=f"{message.author} ({self.inp.chat.channel})",
                                    reason="" if approved else "refused in the chat")
        self.state.approval = None
        if not await self._tell(shown.task_id, "approve", decision):
            return
        verdict = "Approved" if approved else "Refused"
        if workflow.patched(DECISIONS_PATCH):  # the buttons go: the message now says what was decided
            await self._say(f"{verdict} by {message.author}:\n{shown.text}", kind="approval", edit_of=shown.message_id)
        await self._say(f"{verdict} by {message.author}: {shown.text.splitlines()[0]}", reply_to=shown.message_id)

    async def _tell(self, task_id: str, signal: str, arg: object) -> bool:
        """Signal a task; False when it is gone (ended, terminated, reset away): the
        conversation no longer follows it, and says so."""
        try:
            await workflow.get_external_workflow_handle(task_id).signal(signal, arg)
            return True
        except FailureError:
            if task_id == self.state.running:
                self.state.running = self.state.progress_id = None
            if task_id == self.state.asking:
                self.state.asking = None
            await self._say(f"Task {task_id} is no longer running.")
            return False

    async def _start_task(self, message: InboundMessage) -> None:
        state, inp = self.state, self.inp
        state.tasks += 1
        task_id = f"{workflow.info().workflow_id}-task-{state.tasks}"
        task = TaskInput(
            instruction=message.text, attachments=message.attachments, workspace=inp.workspace, model=inp.model,
            provider=inp.provider, session=inp.session, conversation=workflow.info().workflow_id,
            approval=ApprovalMode.DANGEROUS,
            context_window=inp.context_window, search_attributes=inp.search_attributes,
        )
        child = await workflow.start_child_workflow(
            TASK_WORKFLOW, task, id=task_id, task_queue=inp.task_queue,
            memo={"instruction": task.instruction[:2000], "workspace": task.workspace, "model": task.model},
            search_attributes=initial_search_attributes(task.model) if task.search_attributes else None,
            # The task outlives this run (continue-as-new) and reports back by signal.
            parent_close_policy=ParentClosePolicy.ABANDON,
            static_summary=f"chat task · {inp.chat.key}",
        )
        # Its end comes as a report (across this run's continue-as-new too); a failed task's
        # error is looked at here so it is not logged as never retrieved.
        child.add_done_callback(lambda done: done.cancelled() or done.exception())
        state.running, state.progress_id, self.told = task_id, None, []

    # ---- a task's report -------------------------------------------------------------

    async def _on_report(self, report: TaskReport) -> None:
        state = self.state
        if report.task_id != state.running:
            await self._on_other_task(report)
        elif report.kind == "progress":
            if not report.text and workflow.patched(ANSWER_PATCH):
                return  # the message tool's call: the answer or the question, which come as such
            sent = await self._say(f"⏳ {report.text}", kind="progress", edit_of=state.progress_id)
            state.progress_id = state.progress_id or sent.message_ids[0]
        elif report.kind == "approval":
            await self._ask_approval(report)
        elif report.kind == "question":
            await self._say(report.text, kind="question")
        else:
            progress, state.running, state.approval, state.progress_id = state.progress_id, None, None, None
            for n, message in enumerate(report.unread):  # came as it finished: the next task's
                state.pending.append(InboundMessage(event_id=f"{report.task_id}/unread/{n}", chat=self.inp.chat,
                                                    author=message.sent_by, text=message.text,
                                                    attachments=message.attachments))
            if report.heard is not None:  # and those that came after it took its unread: the next task's too
                state.pending += [m for m in self.told if m.event_id not in report.heard]
            self.told = []
            answer = report.text or "(done, with no answer)"
            if progress is not None and workflow.patched(ANSWER_PATCH):
                # The progress message becomes the answer (the adapter deletes it instead and
                # posts the answer when it needs more than one message): each answer shows once.
                await self._say(answer, kind="answer", edit_of=progress)
            else:
                if progress is not None:
                    await self._say("✔️ finished" if not report.failed else "✖️ ended", kind="progress",
                                    edit_of=progress)
                await self._say(answer, kind="answer")

    async def _on_other_task(self, report: TaskReport) -> None:
        """A task this conversation did not start (a schedule's, which names the chat) or no
        longer follows: its approvals, its questions and its end are posted; its progress is
        not. A question is answered by the next message while none of this chat's tasks runs."""
        if report.kind == "approval":
            await self._ask_approval(report, f" (task {report.task_id})")
        elif report.kind == "question" and workflow.patched(DECISIONS_PATCH):
            self.state.asking = report.task_id
            await self._say(f"Task {report.task_id} asks:\n{report.text}\n(Your next message here answers it.)",
                            kind="question")
        elif report.kind == "ended" and not report.task_id.startswith(f"{workflow.info().workflow_id}-task-"):
            if self.state.asking == report.task_id:
                self.state.asking = None
            await self._say(f"Task {report.task_id}:\n{report.text}", kind="answer")

    def _asking(self) -> str | None:
        """The task of another (a schedule's) whose question waits for this chat's answer."""
        return self.state.asking if self.state.asking is not None and workflow.patched(DECISIONS_PATCH) else None

    async def _ask_approval(self, report: TaskReport, whose: str = "") -> None:
        assert report.call_id is not None and report.digest is not None
        text = f"Approval needed{whose}:\n{report.text}\n{APPROVE_HINT}."
        sent = await self._say(text, kind="approval", buttons=[
            Button(action="approve", label="✅"), Button(action="deny", label="❌")])
        self.state.approval = ApprovalShown(message_id=sent.message_ids[0], task_id=report.task_id,
                                            call_id=report.call_id, digest=report.digest, text=report.text)

    async def _say(self, text: str, *, kind: str = "notice", edit_of: str | None = None,
                   buttons: list[Button] | None = None, reply_to: str | None = None) -> Delivered:
        message = OutboundMessage(
            chat=self.inp.chat, key=workflow.uuid4().hex, text=text, kind=kind,  # type: ignore[arg-type]
            edit_of=edit_of, buttons=buttons or [], reply_to=reply_to,
        )
        return await workflow.execute_activity(
            DELIVER_ACTIVITY, message, result_type=Delivered, start_to_close_timeout=DELIVER_TIMEOUT,
            retry_policy=DELIVER_RETRY, summary=f"deliver · {kind}",
        )

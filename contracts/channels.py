"""What crosses a Temporal boundary between chat channels and tasks (issue 31).

A platform event (a Matrix room message or reaction, a Slack message or button press, a
Telegram update, a signed webhook call) becomes one ``InboundMessage``; what the agent says
back is one ``OutboundMessage``, sent by an activity. ``ChatRef`` names a conversation:
(channel, conversation, thread) is the key a conversation's session is bound to. The
design, and why: docs/channels.md.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

from contracts.attachments import Attachment
from contracts.task import Interjection


class ChatRef(BaseModel):
    channel: str  # the table name in channels.toml: "matrix", "slack", "telegram", "webhook"
    conversation: str  # a Matrix room id, a Slack channel id, a Telegram chat id, a webhook's conversation
    thread: str | None = None  # a Slack thread's ts, a Telegram topic: a conversation of its own

    @property
    def key(self) -> str:
        return f"{self.channel}:{self.conversation}" + (f":{self.thread}" if self.thread else "")


class InboundMessage(BaseModel):
    """One event from a person, normalized. ``event_id`` is the platform's own id (Matrix
    event id, Slack event id or action ts, Telegram update id, the webhook's id): the
    conversation handles each one once, however often it is delivered."""

    event_id: str
    chat: ChatRef
    author: str  # the platform's user id (@alice:example.org, U024BE7LH, 123456789)
    author_name: str = ""
    text: str = ""
    attachments: list[Attachment] = Field(default_factory=list)
    reply_to: str | None = None  # the platform message id this answers or reacts to
    reaction: str | None = None  # an approval button or reaction: "approve", "deny", "stop"
    received_at: datetime | None = None
    # Set by the gateway from the channel's ``approvers`` as it hands the message over (the
    # adapters leave it): whether the author may decide approvals, recorded with the message.
    approver: bool = False


class Button(BaseModel):
    action: Literal["approve", "deny", "stop"]
    label: str


class OutboundMessage(BaseModel):
    """One message to post, or to edit in place when ``edit_of`` names an earlier one.
    ``key`` is stable across retries of the activity that sends it (the platform's
    transaction id where it has one), so a retry never posts twice."""

    chat: ChatRef
    key: str
    text: str
    kind: Literal["progress", "answer", "question", "approval", "notice"] = "notice"
    edit_of: str | None = None
    buttons: list[Button] = Field(default_factory=list)
    reply_to: str | None = None


class Delivered(BaseModel):
    message_ids: list[str]  # the platform's ids of what was posted (several when split at the limit)


# ---- the conversation workflow (workflows/conversation.py) ------------------------------

CONVERSATION_WORKFLOW = "Conversation"
INBOUND_SIGNAL = "inbound"  # an InboundMessage, from the gateway (signal-with-start)
TASK_REPORT_SIGNAL = "task_report"  # a TaskReport, from a task the conversation started
DELIVER_ACTIVITY = "deliver"  # an OutboundMessage to its channel: Delivered
GATEWAY_TASK_QUEUE = "agent-gateway"  # conversations and deliveries: served by the gateway


def conversation_id(chat: ChatRef | str) -> str:
    """The conversation's workflow id, from the chat or its key (``matrix:!room:example.org``):
    derived from the chat, so every gateway (and a schedule naming the chat) finds the same."""
    return f"conversation-{chat.key if isinstance(chat, ChatRef) else chat}"


class ApprovalShown(BaseModel):
    """The approval message in the chat, and the exact call it shows."""

    message_id: str
    task_id: str
    call_id: str
    digest: str
    text: str


class ConversationState(BaseModel):
    """What a conversation knows; continue-as-new carries it on."""

    seen: list[str] = Field(default_factory=list)  # the latest event ids handled (bounded)
    pending: list[InboundMessage] = Field(default_factory=list)  # messages not handled yet
    tasks: int = 0  # tasks started so far
    running: str | None = None  # the workflow id of the task running now
    progress_id: str | None = None  # the running task's progress message, edited in place
    approval: ApprovalShown | None = None  # the approval message waiting for a reaction
    asking: str | None = None  # a task not started here (a schedule's) waiting for an answer from this chat


class ConversationInput(BaseModel):
    """How a conversation starts its tasks: the gateway's settings when it was first
    signalled. ``state`` is what continue-as-new carries."""

    chat: ChatRef
    session: str  # the session its tasks share: their history
    workspace: str
    model: str
    provider: str = "openai"
    task_queue: str  # where the tasks run (the workers')
    context_window: int = 128_000
    search_attributes: bool = False  # the tasks upsert AgentState & co. (registered on the server)
    state: ConversationState = Field(default_factory=ConversationState)


class TaskReport(BaseModel):
    """What a task tells the conversation that started it: progress, a call waiting for
    approval (``call_id``, ``digest``: the call the approval message shows), a question,
    its end."""

    task_id: str
    kind: Literal["progress", "approval", "question", "ended"]
    text: str
    call_id: str | None = None
    digest: str | None = None
    failed: bool = False
    # With "ended": messages the task was sent but never read (they came as it finished); the
    # conversation takes them as new messages.
    unread: list[Interjection] = Field(default_factory=list)
    # With "ended": the ``ref`` of every chat message the task received, read or not (None: a
    # task from before it said). A message the conversation sent it that is not here came as
    # it finished, after ``unread`` was taken: the conversation takes it as a new message.
    heard: list[str] | None = None

"""The ``message`` tool: how the model talks to the user.

``info`` reports progress and the task goes on, ``ask`` puts a question and
waits for the reply, ``result`` ends the task with its final answer. The
handler only declares which; the workflow delivers the message.
"""

from __future__ import annotations

from typing import Literal, assert_never

from tools.base import Danger, Field, StrictArgs, ToolContext, ToolDefinition, ToolOutcome

DESCRIPTION = """\
Send a message to the user.
- type "info": a progress note; the task continues.
- type "ask": a question; the task pauses until the user replies.
  Ask only when you cannot go on without the user.
- type "result": the final answer; the task ends. Put everything the user needs in text.
"""


class MessageArgs(StrictArgs):
    type: Literal["info", "ask", "result"] = Field(description="info, ask or result.")
    text: str = Field(description="The message, in Markdown.")


async def send_message(args: MessageArgs, ctx: ToolContext) -> ToolOutcome:
    match args.type:
        case "result":
            return ToolOutcome(final_result=args.text, content="Task completed.")
        case "ask":
            return ToolOutcome(
                ask=args.text, content="Question sent to the user; their reply will follow."
            )
        case "info":
            return ToolOutcome(info=args.text, content="Message delivered to the user.")
        case _:
            assert_never(args.type)


TOOL = ToolDefinition(
    name="message",
    description=DESCRIPTION,
    args_model=MessageArgs,
    handler=send_message,
    danger=Danger.SAFE,
    idempotent=True,
    local=True,
    read_only=True,  # never parallel: a result ends the task, a question waits for the user
    compact_keys=("type",),
)

"""How the calls of one model reply run: its parallel reads together, one other call alone.

Pure, so the engine (``workflows/parallel.py``, where the why is) and the CLI, which marks the
calls that did not run, split a reply the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from core.messages import ToolCallRequest


@dataclass
class Reply:
    """A reply's calls as they run: ``before`` together, then ``single`` alone, then ``after``
    together; ``deferred`` not at all. In the model's order, end to end."""

    before: list[ToolCallRequest] = field(default_factory=list)
    single: ToolCallRequest | None = None
    after: list[ToolCallRequest] = field(default_factory=list)
    deferred: list[ToolCallRequest] = field(default_factory=list)

    @property
    def running(self) -> list[ToolCallRequest]:
        return [*self.before, *([self.single] if self.single else []), *self.after]


def split_reply(calls: list[ToolCallRequest], joins: Callable[[ToolCallRequest], bool]) -> Reply:
    """Split a reply's calls; ``joins`` says whether a call may run in a parallel group."""
    reply, rest = Reply(), list(calls)
    while rest and joins(rest[0]):
        reply.before.append(rest.pop(0))
    if rest:
        reply.single = rest.pop(0)
        while rest and joins(rest[0]):
            reply.after.append(rest.pop(0))
    reply.deferred = rest
    return reply

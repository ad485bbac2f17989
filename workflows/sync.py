"""What the context store already holds, so each LLM call carries only what is new.

Entries below ``synced`` are known to be in the store (an LLM call wrote or
verified them). Above it, entries written by the tool activity itself are
only referenced by digest; every other entry travels in the next LLM input.
The two fields live in the loop state, so continue-as-new carries them.
"""

from __future__ import annotations

from contracts.task import LoopState
from core.entries import Entry, Transcript, entry_digest


class ContextSync:
    def __init__(self, state: LoopState) -> None:
        self.state = state

    def delta(self, transcript: Transcript) -> tuple[list[Entry], dict[int, str]]:
        pending = transcript.since(self.state.synced)
        new = [e for e in pending if e.seq not in self.state.tool_written]
        return new, dict(self.state.tool_written)

    def full(self, transcript: Transcript) -> tuple[list[Entry], dict[int, str]]:
        """Everything this run holds, for a resend after the store reported a gap."""
        return list(transcript.entries), {}

    def tool_wrote(self, entry: Entry, stored_digest: str | None) -> None:
        if stored_digest is not None and stored_digest == entry_digest(entry):
            self.state.tool_written[entry.seq] = stored_digest

    def synced_to(self, total: int) -> None:
        self.state.synced = max(self.state.synced, total)
        self.state.tool_written = {s: d for s, d in self.state.tool_written.items() if s >= total}

"""Parallel reads (seed 002): the calls of one reply that only read run together.

Seed 000 runs one call per turn to keep side effects in order; reads have none, and models
routinely ask for several files in one reply. So a reply is split (``core/reply.py``) into the
parallel calls ahead of its first other call (run together), that call (alone, after its
approval), and the parallel calls right after it (together again); everything from the next
other call on is deferred, as before. A read the model put after a write therefore sees the
write, and results are appended in the order the model asked: each group's results land at
consecutive seqs, which is the ``result_seq`` each of its calls was given.

A call joins a group when its tool declared it parallel (``ToolCallRequest.parallel``, set by
the LLM activity: file read/list/grep, ``load_skill``, ``view``, ``fetch_url``, MCP tools
annotated ``readOnlyHint``) and it needs no approval. At most ``TaskInput.max_parallel`` run
at once. Each is its own activity (or local activity) with its own record, heartbeat, gate,
redaction and untrusted fence; a stop or an interjection cancels all that run.

A mixin of the task workflow: deterministic, no I/O.
"""

from __future__ import annotations

import asyncio

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from contracts.task import TaskState
    from core.messages import ToolCallRequest
    from core.tool_outcome import ToolOutcome
    from workflows import policy
    from workflows.engine import LoopBase


class ParallelMixin(LoopBase):
    async def _execute(self, call: ToolCallRequest, approved: str | None = None, *,
                       seq: int | None = None, announce: bool = True) -> ToolOutcome:
        raise NotImplementedError  # the task workflow's: one call, where its tool declared

    def _joins(self, call: ToolCallRequest) -> bool:
        """Whether a call may run beside others: declared parallel, and no approval needed.
        patched(): runs of the previous release run one call per reply."""
        return self._release and call.parallel and not self.task.approval.requires(call.danger)

    async def _run_together(self, calls: list[ToolCallRequest]) -> list[ToolOutcome]:
        """Run ``calls`` at the same time (at most ``max_parallel``), their results to be
        appended in order from the transcript's next seq. A call not yet started when a stop
        or an interjection comes is not started."""
        if len(calls) <= 1:  # none, or one: as any single call
            return [await self._execute(call, seq=self.transcript.total) for call in calls]
        base = self.transcript.total
        details = ", ".join(policy.shorten(policy.tool_detail(c), 30) for c in calls)
        self._set_state(TaskState.EXECUTING_TOOL, f"tool · {len(calls)} reads · {policy.shorten(details)}")
        slots = asyncio.Semaphore(self.task.max_parallel)

        async def run(index: int, call: ToolCallRequest) -> ToolOutcome:
            async with slots:
                if self._interrupted():
                    return self._interrupted_outcome()
                return await self._execute(call, seq=base + index, announce=False)

        return list(await asyncio.gather(*(run(i, c) for i, c in enumerate(calls))))

    def _interrupted_outcome(self) -> ToolOutcome:
        text = policy.INTERRUPTED_BY_STOP if self.state.stop_reason is not None else policy.INTERRUPTED_BY_USER
        return ToolOutcome(status="error", content=text)

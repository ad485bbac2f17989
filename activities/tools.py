"""The tool activity: validate, coerce and run one tool call in the task's workspace.

It writes the call's result entry to the context store itself (keyed by the
seq the workflow gave it, so a retry replaces rather than duplicates), and a
large output goes to the store once as a blob with a preview in the history.

No call runs twice and no call runs unapproved:

- **The gate.** A call that the task's approval mode requires approval for runs
  only if the workflow passed the digest of that exact call as approved
  (``ToolCallInput.approved``); the activity classifies the call itself, so a
  reset, a bug or a hand-made input cannot run an unapproved command.
- **Started and finished.** Before a call that is not idempotent runs, the store
  records it as started (the shared store, readable by every worker, keyed by task,
  seq and call id) and the first heartbeat says so too; when any call ends, its
  result is recorded. A retry
  (after a worker crash, or a server outage that lost the completion) that finds
  the result returns it without running anything. A retry that finds the call
  started but not finished runs it again only if the tool declares the call
  idempotent (reads, writes of the same content); otherwise the model is told
  the call was interrupted, with the output it had printed so far.

The gate and the started/finished records are in ``activities/tool_records.py``.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from temporalio import activity

import tools
from activities import metrics
from activities.mcp import McpToolRunner
from activities.tool_records import (
    INTERRUPTED,
    BeforeCalls,
    _approved,
    _call_key,
    _finished,
    _gate,
    _offline,
    _output_so_far,
    _started,
    not_undoable,
)
from contracts.activities import BROWSER_CLOSE_ACTIVITY, REDACT_ACTIVITY, TOOL_ACTIVITY, ToolCallInput, ToolProgress
from core.entries import result_entry
from core.heartbeat import with_heartbeats
from core.settings import Settings
from core.untrusted import wrap_untrusted
from runtime import checkpoints
from runtime.audit import AuditLog, default_audit_path
from runtime.logs import get_logger
from runtime.paths import data_dir, hidden_paths
from runtime.secrets import SecretStore
from runtime.store import FINISHED, STARTED, ContextGap, ContextStore, Store, as_store
from temporal.tracing import tool_span
from tools.base import ToolContext, ToolOutcome
from tools.browser import BrowserPool
from tools.egress import NO_NETWORK
from tools.registry import REGISTRY, is_idempotent
from tools.shell_network import CommandEgress

PREVIEW_CHARS = 1500


class ToolActivities:
    def __init__(
        self,
        store: Store | ContextStore,
        secrets: SecretStore,
        settings: Settings,
        audit: AuditLog | None = None,
        workspace_checkpoints: checkpoints.Checkpoints | None = None,
        mcp: McpToolRunner | None = None,
        browsers: BrowserPool | None = None,
        command_egress: CommandEgress | None = None,
    ) -> None:
        """``settings``: the worker's (the blob cap, checkpoints, what commands must not see,
        where the audit log and checkpoints go unless given, each tool's group); ``browsers``:
        its browser (None: the browser tools say there is none)."""
        self.store = as_store(store)
        self.settings = settings
        self.blob_cap_chars = settings.worker.blob_cap_chars
        self.hidden = hidden_paths(settings)
        self.mcp = mcp  # runs calls of MCP tools (None: such calls fail)
        self.browsers = browsers
        self.command_egress = command_egress  # networked shell commands' proxy (None: they have no way out)
        self._checkpoints = BeforeCalls(settings, workspace_checkpoints)
        self.secrets = secrets
        self._audit = audit

    @property
    def audit(self) -> AuditLog:
        if self._audit is None:  # opened on first use: a worker that runs no tool writes no log
            self._audit = AuditLog(default_audit_path(self.settings.paths), self.secrets)
        return self._audit

    @activity.defn(name=REDACT_ACTIVITY)
    async def redact_text(self, text: str) -> str:
        """A person's message with secrets as placeholders (run as a local activity)."""
        return self.secrets.redact(text)

    @activity.defn(name=BROWSER_CLOSE_ACTIVITY)
    async def close_browser(self, task_id: str) -> None:
        """A finished task's pages, closed on this worker (nothing when it holds none)."""
        if self.browsers is not None:
            await self.browsers.close_task(task_id)

    @activity.defn(name=TOOL_ACTIVITY)
    async def run_tool(self, inp: ToolCallInput) -> ToolOutcome:
        # Heartbeats go on through every step, store calls included: a store that is locked or
        # slow delays this call only, and Temporal never takes it for a dead worker's.
        progress = ToolProgress(started=False, finished=_finished(activity.info().heartbeat_details))
        if activity.info().is_local:  # a local activity (a read) has no heartbeats to send
            return await metrics.tool_call(inp.call.name, self._run_tool(inp, progress))
        return await metrics.tool_call(inp.call.name, with_heartbeats(
            self._run_tool(inp, progress), lambda _detail: activity.heartbeat(progress)))

    async def _run_tool(self, inp: ToolCallInput, progress: ToolProgress) -> ToolOutcome:
        info = activity.info()
        if not inp.task_id:  # left out of the input: the workflow's id
            inp = inp.model_copy(update={"task_id": info.workflow_id})
        log = get_logger(workflow_id=inp.task_id, run_id=info.workflow_run_id, activity=TOOL_ACTIVITY,
                         turn=inp.turn, attempt=info.attempt, tool=inp.call.name)
        key = _call_key(inp)
        if progress.finished is not None:  # ran to the end on an earlier attempt; its store write failed
            log.info("tool finished on an earlier attempt: storing its result")
            return await self._finish(inp, key, progress.finished, log)
        idempotent = await self._idempotent(inp)
        # A first attempt of a call that may simply run again has nothing to look up: had it run
        # before (a workflow task replayed after a crash), running it again is what it declares safe.
        record = None
        if inp.context_id and key and not (idempotent and info.attempt == 1):
            record = await self.store.get_call(inp.context_id, key)
        if record is not None and record[0] == FINISHED and record[1]:
            # It ran to the end before: its completion was lost (a crash or a server outage).
            log.info("tool already finished: returning its recorded result")
            return await self._recorded(inp, record[1])
        started_before = record is not None or _started(info.heartbeat_details)
        started = time.monotonic()
        with tool_span(inp.call.name, inp.call.id, inp.task_id, inp.turn) as span:
            result = await self._execute(inp, key, started_before, idempotent, progress)
            span.record(result.status)
        result = await self._store_image(result)
        # Nothing leaves this activity (history, store, model) with a secret in clear.
        result = self.secrets.redact_obj(result)
        # In a thread, like the store: the log is shared by the worker's processes (a file lock),
        # and a slow disk or a held lock must delay this call only, never the event loop.
        await asyncio.to_thread(
            self.audit.record, workflow_id=inp.task_id, turn=inp.turn, tool=inp.call.name,
            arguments=inp.call.arguments, result=result, duration_ms=int((time.monotonic() - started) * 1000),
        )
        if not info.is_local:  # kept in the heartbeat until stored: a store that is down loses nothing
            progress.finished = result
            activity.heartbeat(progress)
        return await self._finish(inp, key, result, log)

    async def _finish(self, inp: ToolCallInput, key: str | None, result: ToolOutcome, log: Any) -> ToolOutcome:
        if inp.context_id is not None and key is not None:  # a key: the call has a result seq
            result = await self._store_result(inp, key, result)
        log.info("tool done", status=result.status, exit_code=result.exit_code, truncated=result.truncated)
        return result

    async def _execute(
        self, inp: ToolCallInput, key: str | None, started_before: bool, idempotent: bool, progress: ToolProgress
    ) -> ToolOutcome:
        if inp.call.not_offered:
            return ToolOutcome(status="error", content=inp.call.not_offered)
        workspace = Path(inp.workspace)
        if not workspace.is_dir():
            return ToolOutcome(status="error", content=f"the workspace {inp.workspace} does not exist")
        refusal = _gate(inp) if inp.mcp is None else await self._mcp_gate(inp)
        if refusal is not None:
            return refusal
        if started_before and not idempotent:
            output = _output_so_far(activity.info().heartbeat_details)
            return ToolOutcome(status="error", content=INTERRUPTED.format(output=output or "(none recorded)"))
        def beat(note: str = "") -> None:
            progress.note = note
            activity.heartbeat(progress)

        def keep_output(output: str) -> None:
            progress.output = output

        left_out = await self._checkpoints.save(inp, workspace)
        progress.started = True
        if not idempotent:
            # Only a call that must not run twice needs its start on record: a retry of an
            # idempotent one runs it again, which is what it declares safe (and a read or a
            # write of the same content costs no store write and no heartbeat up front).
            if inp.context_id and key:
                await self.store.put_call(inp.context_id, key, STARTED)
            beat("started")
        ctx = ToolContext(
            workspace=workspace, settings=self.settings, task_id=inp.task_id, heartbeat=beat, progress=keep_output,
            redact=self.secrets.redact, network=inp.network, hidden=self.hidden, browser=inp.browser,
            browsers=self.browsers, index_dir=data_dir(self.settings.paths) / "memory-index",
            command_egress=self.command_egress,
            approved=_approved(inp),  # the person approved this exact call: it may write control files
        )
        # Placeholders become real values only here, at execution time.
        arguments = self.secrets.restore_obj(inp.call.arguments)
        work = (tools.execute(inp.call.name, arguments, ctx, parse_error=inp.call.parse_error) if inp.mcp is None
                else self._mcp_run(inp, arguments))
        result = await work  # run_tool's loop beats the progress (and the tool's own notes) meanwhile
        tool = REGISTRY.get(inp.call.name)
        if tool is not None and tool.untrusted_source is not None and result.status == "ok":
            source = tool.untrusted_source(inp.call.arguments)
            if source:
                result = result.model_copy(update={"content": wrap_untrusted(result.content, source)})
        if left_out:
            result = result.model_copy(update={"content": result.content + not_undoable(left_out)})
        return result

    async def _mcp_gate(self, inp: ToolCallInput) -> ToolOutcome | None:
        """The gate for an MCP call, classified from the server's annotations as they are now."""
        if self.mcp is None or inp.mcp is None:
            return ToolOutcome(status="error", content="[mcp error] this worker does not run MCP tools")
        if _offline(inp):
            return ToolOutcome(status="error", content=f"[mcp error] the task's MCP server {inp.mcp.server} "
                               f"is reached over HTTP, and {NO_NETWORK}")
        return _gate(inp, await self.mcp.classify(inp.mcp))

    async def _idempotent(self, inp: ToolCallInput) -> bool:
        if inp.mcp is None:
            return is_idempotent(inp.call.name, inp.call.arguments)
        return self.mcp is None or _offline(inp) or await self.mcp.idempotent(inp.mcp)

    async def _mcp_run(self, inp: ToolCallInput, arguments: dict[str, Any]) -> ToolOutcome:
        assert self.mcp is not None and inp.mcp is not None  # checked by the gate
        if inp.call.parse_error is not None:
            return ToolOutcome(status="retry", content=f"The arguments for {inp.call.name!r} were not valid JSON "
                               f"({inp.call.parse_error}). Send the arguments again as one JSON object.")
        return await self.mcp.run(inp.mcp, arguments, self.secrets.redact)

    async def _store_image(self, result: ToolOutcome) -> ToolOutcome:
        """An image a handler produced goes to the store once, as a blob; the result keeps its
        digest and size only, so the bytes never reach the history (nor pass the redaction of
        text, which would only slow down on a megabyte of base64)."""
        image = result.image
        if image is None or image.data is None:
            return result
        digest = await self.store.put_blob(image.data)
        return result.model_copy(update={"image": image.model_copy(update={"digest": digest, "data": None})})

    async def _store_result(self, inp: ToolCallInput, key: str, result: ToolOutcome) -> ToolOutcome:
        """The result's entry in the store, and the call's finished record with it (one write)."""
        if len(result.content) > self.blob_cap_chars:
            digest = await self.store.put_blob(result.content)
            preview = result.content[:PREVIEW_CHARS]
            result = result.model_copy(
                update={
                    "blob": digest,
                    "full_chars": len(result.content),
                    "content": f"{preview}\n[... preview of {len(result.content)} characters; "
                    f"the model sees the full output (blob {digest[:12]}) ...]",
                }
            )
        assert inp.context_id is not None and inp.result_seq is not None  # checked by the caller
        entry = result_entry(inp.call.id, inp.call.name, result, seq=inp.result_seq, turn=inp.turn)
        # A call the workflow cancelled meanwhile finds its seq taken by what the workflow put
        # there (``[interrupted]``) and leaves it; the digest returned is then that entry's, not
        # its own, and the workflow sends its own entry itself.
        (held,) = await self.store.finish_call(inp.context_id, [entry], key, result.model_dump_json())
        return result.model_copy(update={"stored_digest": held})

    async def _recorded(self, inp: ToolCallInput, body: str) -> ToolOutcome:
        """The result an earlier attempt recorded, with the digest its seq holds now (none when the
        store lost it: the workflow then sends the entry)."""
        result = ToolOutcome.model_validate_json(body)
        assert inp.context_id is not None and inp.result_seq is not None  # a record has both
        try:
            [(held, _)] = await self.store.load_range(inp.context_id, inp.result_seq, inp.result_seq + 1)
        except ContextGap:
            return result
        return result.model_copy(update={"stored_digest": held})

"""The tool activity: validate, coerce and run one tool call in the task's workspace.

It writes the call's result entry to the context store itself (keyed by the
seq the workflow gave it, so a retry replaces rather than duplicates), and a
large output goes to the store once as a blob with a preview in the history.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from temporalio import activity

import tools
from contracts.activities import TOOL_ACTIVITY, ToolCallInput
from core.entries import entry_digest, result_entry
from core.heartbeat import with_heartbeats
from core.untrusted import wrap_untrusted
from runtime.audit import AuditLog, default_audit_path
from runtime.logs import get_logger
from runtime.secrets import SecretStore
from runtime.store import ContextStore, Store, as_store
from temporal.tracing import tool_span
from tools.base import ToolContext, ToolOutcome
from tools.registry import REGISTRY

BLOB_CAP_CHARS = int(os.environ.get("AGENT_BLOB_CAP_CHARS", "8000"))
PREVIEW_CHARS = 1500


class ToolActivities:
    def __init__(
        self,
        store: Store | ContextStore,
        secrets: SecretStore | None = None,
        audit: AuditLog | None = None,
    ) -> None:
        self.store = as_store(store)
        self.secrets = secrets if secrets is not None else SecretStore.from_env()
        self._audit = audit

    @property
    def audit(self) -> AuditLog:
        if self._audit is None:  # opened on first use: a worker that runs no tool writes no log
            self._audit = AuditLog(default_audit_path(), self.secrets)
        return self._audit

    @activity.defn(name=TOOL_ACTIVITY)
    async def run_tool(self, inp: ToolCallInput) -> ToolOutcome:
        info = activity.info()
        log = get_logger(workflow_id=inp.task_id, run_id=info.workflow_run_id, activity=TOOL_ACTIVITY,
                         turn=inp.turn, attempt=info.attempt, tool=inp.call.name)
        started = time.monotonic()
        with tool_span(inp.call.name, inp.call.id, inp.task_id, inp.turn) as span:
            result = await self._execute(inp)
            span.record(result.status)
        # Nothing leaves this activity (history, store, model) with a secret in clear.
        result = self.secrets.redact_obj(result)
        self.audit.record(
            workflow_id=inp.task_id, turn=inp.turn, tool=inp.call.name, arguments=inp.call.arguments,
            result=result, duration_ms=int((time.monotonic() - started) * 1000),
        )
        if inp.context_id is not None and inp.result_seq is not None:
            result = await self._store_result(inp, result)
        log.info("tool done", status=result.status, exit_code=result.exit_code, truncated=result.truncated)
        return result

    async def _execute(self, inp: ToolCallInput) -> ToolOutcome:
        workspace = Path(inp.workspace)
        if not workspace.is_dir():
            return ToolOutcome(status="error", content=f"the workspace {inp.workspace} does not exist")
        ctx = ToolContext(workspace=workspace, task_id=inp.task_id, heartbeat=activity.heartbeat)
        # Placeholders become real values only here, at execution time.
        arguments = self.secrets.restore_obj(inp.call.arguments)
        result = await with_heartbeats(
            tools.execute(inp.call.name, arguments, ctx, parse_error=inp.call.parse_error), activity.heartbeat
        )
        tool = REGISTRY.get(inp.call.name)
        if tool is not None and tool.untrusted_source is not None and result.status == "ok":
            source = tool.untrusted_source(inp.call.arguments)
            if source:
                result = result.model_copy(update={"content": wrap_untrusted(result.content, source)})
        return result

    async def _store_result(self, inp: ToolCallInput, result: ToolOutcome) -> ToolOutcome:
        if len(result.content) > BLOB_CAP_CHARS:
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
        await self.store.put(inp.context_id, [entry])
        return result.model_copy(update={"stored_digest": entry_digest(entry)})

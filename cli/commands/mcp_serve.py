"""``mcp-serve``: the agent as an MCP server, so any MCP client (an IDE, another agent) can
hand off durable work and come back for it later.

Tools: ``start_task``, ``task_status``, ``approve``, ``interject``, ``list_tasks``, over stdio
(the client starts this process) or streamable HTTP at ``http://HOST:PORT/mcp``, where every
request needs the bearer token (cli/mcp_access.py). The task options are the defaults of the
tasks it starts; a client may pick a workspace under the server's, and ``approval: "never"``
only from a server started with it. With ``--worker`` (and always on the embedded dev
server) a worker runs in this process. Nothing but the protocol goes to stdout.
"""

from __future__ import annotations

import argparse
import copy
import sys
from contextlib import AsyncExitStack
from dataclasses import asdict
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus, WorkflowUpdateFailedError

from cli import tasks
from cli.local import local_worker
from cli.mcp_access import BearerGuard, ServeToken, serve_token, task_request
from cli.options import add_task_options
from cli.task_listing import TaskFilter, find
from contracts.task import ApprovalDecision, Interjection, TaskStatus
from runtime.paths import data_dir
from runtime.secrets import SecretStore
from temporal.client import connect, is_embedded
from worker import task_queue
from workflows.task import AgentTaskWorkflow

ANSWER_WAIT = timedelta(seconds=5)
INSTRUCTIONS = (
    "Durable agent tasks on Temporal. start_task hands off work and returns its id at once; the task "
    "runs on even if this connection ends. Poll task_status for its state, its result, or a tool call "
    "waiting for approval (decide it with approve); interject sends the task a message."
)


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("mcp-serve", help="serve the agent over MCP (stdio, or streamable HTTP with --http)")
    s.add_argument("--http", type=int, metavar="PORT", help="serve streamable HTTP on this port instead of stdio")
    s.add_argument("--host", default="127.0.0.1", help="the address to serve HTTP on (default: 127.0.0.1)")
    s.add_argument("--worker", action="store_true", help="run a worker in this process while serving")
    add_task_options(s)
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    root = tasks.workspace_of(args)  # where its tasks may work: refused before anything starts if unfit
    token = serve_token(args.settings.mcp.token, data_dir(args.settings.paths)) if args.http else None
    client = await connect(args.settings)
    async with AsyncExitStack() as stack:
        if args.worker or is_embedded(args.settings.temporal):
            await local_worker(stack, client, task_queue(args.settings.temporal), None, args.settings)
        server = build_server(client, args, root)
        if token is not None:
            await serve_http(server, args.host, args.http, token)
        else:
            await server.run_stdio_async()
    return 0


async def serve_http(server: Any, host: str, port: int, token: ServeToken) -> None:
    """The SDK's streamable HTTP app behind ``BearerGuard``, served as the SDK serves it."""
    import uvicorn

    app = BearerGuard(server.streamable_http_app(host=host), token.value)
    shown = f"[{host}]" if ":" in host else host
    print(token.notice(f"http://{shown}:{port}/mcp"), file=sys.stderr, flush=True)
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower())
    await uvicorn.Server(config).serve()


def build_server(client: Client, defaults: argparse.Namespace, root: Path) -> Any:
    """The MCP server; ``root``: the directory its tasks' workspaces must be under."""
    from mcp.server.mcpserver import MCPServer
    from mcp_types import ToolAnnotations

    server = MCPServer("durable-agent", instructions=INSTRUCTIONS)
    reads = ToolAnnotations(read_only_hint=True, destructive_hint=False, idempotent_hint=True)

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False, open_world_hint=True))
    async def start_task(instruction: str, workspace: str | None = None, model: str | None = None,
                         approval: str | None = None) -> dict[str, str]:
        """Start a durable agent task and return its id at once (it runs on after this call).
        workspace: the directory it works in, under the server's (the default); model and
        approval ("dangerous", "always", "never") default to the server's."""
        args = copy.copy(defaults)
        args.task = instruction
        args.model = model or defaults.model
        try:
            path, args.approval = task_request(workspace, approval, root, defaults.approval)
            args.workspace = str(path)
            inp = tasks.task_input(args, tasks.configured_model(args))
        except tasks.UserError as err:
            raise refusal(str(err)) from None
        temporal = defaults.settings.temporal
        workflow_id = await tasks.start_task(client, inp, task_queue(temporal), temporal)
        return {"workflow_id": workflow_id, "ui": tasks.ui_link(client, workflow_id, temporal)}

    @server.tool(annotations=reads)
    async def task_status(workflow_id: str) -> dict[str, Any]:
        """A task's state, turn, cost, the tool call waiting for approval or the question it
        asks, and its final text or error once it has ended."""
        status = await _status(client, workflow_id)
        return status.model_dump(mode="json", include={
            "state", "turn", "last_activity", "model", "cost_usd", "error", "final_text", "pending_approval",
            "question", "plan", "approval"})

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    async def approve(workflow_id: str, approved: bool = True, call_id: str | None = None,
                      reason: str = "") -> str:
        """Approve (or, with approved=false, deny) the tool call the task waits for. call_id
        names the call seen in task_status; without it, whichever call is pending now."""
        status = await _status(client, workflow_id)
        pending = status.pending_approval
        if pending is None:
            raise refusal(f"task {workflow_id} has no tool call waiting for approval")
        if call_id is not None and call_id != pending.call_id:
            raise refusal(f"the pending call is {pending.call_id}, not {call_id}")
        decision = ApprovalDecision(approved=approved, call_id=pending.call_id, digest=pending.digest or None,
                                    reason=reason, decided_by="mcp client")
        try:
            decided = await client.get_workflow_handle(workflow_id).execute_update(
                AgentTaskWorkflow.decide, decision, rpc_timeout=ANSWER_WAIT)
        except WorkflowUpdateFailedError as err:
            raise refusal(f"decision rejected: {getattr(err.cause, 'message', err.cause)}") from None
        return f"{'approved' if approved else 'denied'}: {decided.tool} call {decided.call_id}"

    @server.tool(annotations=ToolAnnotations(read_only_hint=False, destructive_hint=False))
    async def interject(workflow_id: str, text: str) -> str:
        """Send a running task a message: it cuts off what runs, answers a question the task
        asked, or supersedes a pending approval."""
        desc = await tasks.describe(client, workflow_id)
        if desc.status != WorkflowExecutionStatus.RUNNING:
            raise refusal(f"task {workflow_id} is not running")
        text = SecretStore.from_settings(defaults.settings.secrets).redact(text)
        await client.get_workflow_handle(workflow_id).signal(
            AgentTaskWorkflow.interject, Interjection(text=text, sent_by="mcp client"))
        return f"message delivered to {workflow_id}"

    @server.tool(annotations=reads)
    async def list_tasks(waiting: bool = False, limit: int = 20) -> list[dict[str, Any]]:
        """Recent tasks, running ones first: each with its state, turn, cost, age and the start
        of its instruction; waiting=true: only those waiting for a person."""
        page = await find(client, TaskFilter(pending=waiting), max(1, min(limit, 200)))
        return [asdict(row) for row in page.rows]

    return server


def refusal(message: str) -> Exception:
    """An error the client reads as it is (the SDK hides the text of any other exception)."""
    from mcp.server.mcpserver.exceptions import ToolError

    return ToolError(message)


async def _status(client: Client, workflow_id: str) -> TaskStatus:
    try:
        desc = await tasks.describe(client, workflow_id)
    except tasks.UserError as err:
        raise refusal(str(err)) from None
    if desc.status == WorkflowExecutionStatus.RUNNING:
        return await client.get_workflow_handle(workflow_id).query(AgentTaskWorkflow.status, rpc_timeout=ANSWER_WAIT)
    return await tasks.finished_status(client, desc, await tasks.closed_outcome(client, workflow_id))

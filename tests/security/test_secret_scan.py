"""A secret given to the agent never appears in clear in an LLM request, the history, the logs
or the audit log, and still reaches the tool that needs it."""

from __future__ import annotations

import json

import structlog

import runtime.logs as log_module
from cli.tasks import instruction_text
from contracts.task import TaskState
from fakes.scripted import tool
from fakes.step import Step
from runtime.audit import default_audit_path
from tests import configured
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start

SECRET = "hunter2-Sup3r-s3cret"


async def test_secret_never_appears_in_clear_anywhere_but_in_the_tool(client, task_queue, workspace, monkeypatch, capsys):
    monkeypatch.setenv("AGENT_SECRET_DB_PASSWORD", SECRET)
    monkeypatch.setattr(log_module, "_configured", False)
    log_module.configure_logging("INFO", secrets=configured.secrets())
    try:
        steps = [
            tool("shell", command="echo {{secret:DB_PASSWORD}} > pw.txt && cat pw.txt"),
            Step(text=f"I noticed the password is {SECRET}.", tool_calls=[("file", {"action": "read", "path": "pw.txt"})]),
            tool("message", type="result", text=f"done; it was {SECRET}"),
        ]
        instruction = instruction_text(f"Store the database password {SECRET} in pw.txt", workspace, configured.secrets())
        async with scripted_worker(client, task_queue, steps) as model:
            handle = await start(client, task_queue, make_input(workspace, instruction))
            outcome = await outcome_of(handle)
            history = await handle.fetch_history()
    finally:
        structlog.reset_defaults()
        monkeypatch.setattr(log_module, "_configured", False)
    assert outcome.status == TaskState.DONE
    assert (workspace / "pw.txt").read_text().strip() == SECRET  # the tool got the real value
    assert outcome.final_text == "done; it was {{secret:DB_PASSWORD}}"
    raw_history = b"".join(e.SerializeToString() for e in history.events)
    assert SECRET.encode() not in raw_history
    assert b"{{secret:DB_PASSWORD}}" in raw_history
    bodies = json.dumps(model.requests)
    assert SECRET not in bodies and "{{secret:DB_PASSWORD}}" in bodies
    assert "Store the database password {{secret:DB_PASSWORD}}" in bodies
    logs = capsys.readouterr()
    assert SECRET not in logs.out + logs.err
    assert '"workflow_id": "' + handle.id in logs.err  # JSON logs bound to the workflow
    audit = default_audit_path(configured.settings().paths).read_text()
    assert SECRET not in audit and handle.id in audit
    lines = [json.loads(line) for line in audit.splitlines() if handle.id in line]
    assert [entry["tool"] for entry in lines] == ["shell", "file", "message"]

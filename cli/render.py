"""How the CLI shows a task's entries, status and outcome (rich on a terminal, plain lines otherwise)."""

from __future__ import annotations

import json
import re
import sys

from rich.console import Console

from cli.calls import render_call, safe
from contracts.task import PendingApproval, TaskOutcome, TaskState, TaskStatus
from core.entries import (
    AiMessage,
    Entry,
    StatusNotice,
    SystemReminder,
    ToolCall,
    ToolResult,
    UserMessage,
)
from core.reply import split_reply
from core.text import shorten as core_shorten
from core.untrusted import TAG, UNTRUSTED_NOTE

RESULT_PREVIEW_LINES = 6
# The lines of the untrusted-content wrapper (core/untrusted.py), which only the model needs: a
# look-alike inside the content has its "<" escaped, so only the wrapper's own lines match.
_WRAPPER_LINE = re.compile(rf"<{TAG}(?: [^>]*)?>|</{TAG}>|{re.escape(UNTRUSTED_NOTE)}")
# A tool's own line saying it cut its output (tools/shell_output.py, tools/file_actions.py, the browser).
_CUT_NOTE = re.compile(r"\[.*\b(?:truncated|capped|cut|not shown|stopped at)\b.*\]")
# A timestamp's fraction of a second (a notice says when a call was decided): people read seconds.
_FRACTION = re.compile(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)\.\d+")
# What ``run`` tells the task when the person presses Ctrl-C (cli/conversation.py): written for
# the model, so a person sees the CLI's own line about it instead (``--verbose`` shows both).
INTERRUPTED = (
    "The person pressed Ctrl-C: what was running was cut off, and they are waiting to say what comes "
    'next. Do not go on with the task: end it now with a short result (message type "result") '
    "saying where things stand."
)


def make_console() -> Console:
    return Console(highlight=False, soft_wrap=True, force_terminal=None if sys.stdout.isatty() else False)


def shorten(text: str, limit: int = 160) -> str:
    return core_shorten(text, limit)


def unwrap(text: str) -> str:
    """A tool result without the untrusted-content wrapper and its note, wherever they are
    (a browser result has its own lines around them): for people; the model gets it whole."""
    return "\n".join(row for row in text.splitlines() if not _WRAPPER_LINE.fullmatch(row))


def preview(result: ToolResult, lines: int = RESULT_PREVIEW_LINES) -> str:
    """The first ``lines`` a person sees of a result, blank lines left out, and what the model got
    beyond them: the whole output of one kept as a blob (the history holds only its start),
    else the lines not shown; a tool's own note that it cut the output stays in view."""
    content = result.content
    if result.blob:  # the start of the output, then a line the tool activity adds for the history
        content = content.rsplit("\n", 1)[0]
    rows = [row for row in unwrap(content).splitlines() if row.strip()]
    shown = rows[:lines]
    if result.full_chars:
        shown.append(f"… the rest is not shown here; the model got all {result.full_chars:,} characters")
    elif len(rows) > lines:
        shown.append(f"… {len(rows) - lines:,} more lines not shown here; the model got {len(result.content):,} characters")
    if result.truncated:  # what the tool cut, in its own words
        shown += [row for row in rows[lines:] if _CUT_NOTE.fullmatch(row)]
    return "\n".join("    " + row for row in shown)


def for_people(entry: Entry) -> bool:
    """Whether ``run`` and ``watch`` show the entry without ``--verbose``: not the engine's
    reminders to the model, nor the message the CLI sends the model on a Ctrl-C."""
    return not isinstance(entry, SystemReminder) and not (isinstance(entry, UserMessage) and entry.text == INTERRUPTED)


def to_the_second(text: str) -> str:
    return _FRACTION.sub(r"\1", text)


def render_entry(console: Console, entry: Entry, *, text_shown: bool = False, verbose: bool = False) -> None:
    """One entry; ``text_shown`` when the model's text of this turn was already streamed;
    ``verbose``: also what was written for the model alone (see ``for_people``)."""
    if not verbose and not for_people(entry):
        return
    match entry:
        case UserMessage():
            console.print(f"[bold]user[/]  {safe(entry.text)}")
        case AiMessage():
            if not text_shown:
                console.print(f"[cyan]model[/] {safe(entry.text)}")
        case ToolCall():
            if entry.text.strip() and not text_shown:
                console.print(f"[cyan]model[/] {safe(entry.text.strip())}")
            ran = split_reply(entry.calls, lambda c: c.parallel).running  # the reads run together
            for call in entry.calls:
                tag = "" if call in ran else " [dim](deferred)[/]"
                if call.name == "message" and not call.parse_error and not tag:
                    kind = call.arguments.get("type", "info")
                    if kind != "result":  # the result is printed with the outcome
                        console.print(f"[bold cyan]{safe(str(kind))}[/] {safe(str(call.arguments.get('text', '')))}")
                    continue
                if call.name == "plan" and not call.parse_error and isinstance(call.arguments.get("items"), list):
                    marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
                    console.print(f"[magenta]→ plan[/]{tag}")
                    for item in call.arguments["items"]:
                        if isinstance(item, dict):
                            mark = marks.get(str(item.get("status")), "[?]")
                            console.print(f"    {safe(mark)} {safe(str(item.get('desc', '')))}")
                    continue
                render_call(console, call.name, call.arguments, (call.arguments_raw or "") if call.parse_error else None, tag=tag)
        case ToolResult():
            if entry.name == "message" and entry.status == "ok":
                return  # the message text is shown with its call
            colour = {"ok": "green", "deferred": "dim", "retry": "yellow"}.get(entry.status, "red")
            head = f"[{colour}]← {entry.status}[/]"
            if entry.exit_code is not None:
                head += f" [dim](exit {entry.exit_code})[/]"
            console.print(head)
            if entry.content.strip() and entry.status != "deferred":
                console.print(safe(preview(entry)), style="dim")
        case SystemReminder():
            console.print(f"[yellow]! reminder[/] {safe(shorten(entry.text, 200))}")
        case StatusNotice():
            console.print(f"[yellow]· {safe(to_the_second(entry.text))}[/]")


def approval_text(pending: PendingApproval) -> str:
    """A pending call as a person reads it: a shell command as it is, else its arguments."""
    command = pending.arguments.get("command") if pending.tool == "shell" else None
    return command if isinstance(command, str) else json.dumps(pending.arguments, ensure_ascii=False)


def render_outcome(console: Console, outcome: TaskOutcome, duration_s: float | None = None) -> None:
    usage = outcome.usage
    took = f", {duration_s:.1f}s" if duration_s is not None else ""
    cost = f", ${outcome.cost_usd:.4f}" if outcome.cost_usd else ""
    summary = f"{outcome.turns} turns, {usage.input_tokens} in / {usage.output_tokens} out tokens{cost}{took}"
    if outcome.status == TaskState.DONE:
        console.print(f"\n[bold green]DONE[/] ({summary})")
        console.print(safe(outcome.final_text))
    else:
        stopped = " (stopped)" if outcome.stopped else ""
        label = outcome.status.value.replace("_", " ")
        console.print(f"\n[bold red]{label}{stopped}[/] ({summary}): {safe(outcome.error or '')}")


def status_lines(workflow_id: str, status: TaskStatus, ui_url: str) -> list[str]:
    usage = status.usage
    lines = [
        f"task:     {workflow_id}",
        f"state:    {status.state.value}",
        f"turn:     {status.turn}",
        f"model:    {status.provider + ':' if status.provider else ''}{status.model}",
        f"activity: {status.last_activity or '-'}",
        f"tokens:   {usage.input_tokens} in / {usage.output_tokens} out"
        + (f" (cache read {usage.cache_read_tokens}, write {usage.cache_write_tokens})" if usage.cache_read_tokens or usage.cache_write_tokens else ""),
        f"cost:     ${status.cost_usd:.4f}",
    ]
    if status.plan:
        marks = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]"}
        lines.append("plan:     " + "\n          ".join(f"{marks.get(i['status'], '[?]')} {i['id']}. {i['desc']}" for i in status.plan))
    if status.pending_approval:
        p = status.pending_approval
        lines.append(f"pending:  {p.tool} {shorten(approval_text(p), 200)} (call {p.call_id})")
        lines.append(f"why:      {p.danger}: {p.reason}")
    if status.question:
        lines.append(f"question: {status.question}")
    if status.error:
        lines.append(f"error:    {status.error}")
    if status.final_text:
        lines.append(f"result:   {shorten(status.final_text, 300)}")
    lines.append(f"ui:       {ui_url}")
    return lines

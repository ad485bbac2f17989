"""A decision or an interjection as a person sends it by hand, and the pending call as a
person reads it.

The ``decide`` update and the ``approve`` signal take their payload as raw JSON and check it
here, so a malformed one (``true``, ``{}``, a misspelt field) is refused in one line that
names the fields, never with a Python traceback. The ``interject`` signal and its update
form take theirs as the raw payload, so that even bytes that are not UTF-8 JSON are named
here rather than dropped by the SDK's converter with a traceback. The Temporal UI's current details of a
task waiting for approval show the call exactly, why it asks, and the one line that
approves it. Pure: the workflow calls these.
"""

from __future__ import annotations

import json
import shlex
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError
from temporalio.common import RawValue
from temporalio.exceptions import ApplicationError

from contracts.task import ApprovalDecision, Interjection, PendingApproval, TaskOutcome
from core.markdown import code_block, code_span

# The interject handlers' parameter: the payload as it came (``RawValue``), so that a malformed
# one is named by ``parse_interjection`` rather than dropped by the SDK's converter with a
# traceback; an ``Interjection`` to the type checker, which is what senders send.
if TYPE_CHECKING:
    RawInterjection = Interjection
else:
    RawInterjection = RawValue

FIELDS = ('"approved": true or false (required), "digest": the pending call\'s digest (required), '
          '"reason": text, "decided_by": your name, "remember": true to also allow calls like this '
          'for the rest of the task, "call_id"')
DECIDE_DESCRIPTION = (
    'Approve or deny the tool call the task waits for; answers with that call. Payload: a JSON object, '
    '{"approved": true, "digest": "<the digest shown in the current details>"}; fields: ' + FIELDS + "."
)
APPROVE_DESCRIPTION = "Like the decide update, without an answer (a malformed payload is ignored). " + DECIDE_DESCRIPTION
INTERJECTION_FIELDS = '"text": the message (required), "sent_by": your name'
INTERJECT_UPDATE_DESCRIPTION = ("Like the interject signal, but the caller learns whether it was taken: a "
                                "malformed payload, or a task that has ended, is refused with the reason. "
                                "Fields: " + INTERJECTION_FIELDS + ".")
STOP_DESCRIPTION = 'Stop the task. Payload: optional, the reason as a string or {"reason": "..."}.'
INTERJECT_DESCRIPTION = ('Send the task a message: it reaches the model before its next step, cutting off a model '
                         'call or tool that is running. Payload: {"text": "...", "sent_by": "your name"}. '
                         'Fire-and-forget: a malformed payload is logged by the worker and dropped; the '
                         'interject_checked update refuses it with the reason.')
STATUS_DESCRIPTION = "The task's state, turn, usage, cost, plan, pending approval or question, and permission rules."
EVENTS_DESCRIPTION = ("The task's entries after a sequence number (argument: an int, 0 for all), with its status "
                      "and outcome: what `watch` shows.")
CONTEXT_DESCRIPTION = "The model's context entries after a sequence number (argument: an int): for workers."


class Refusal(ApplicationError):
    """A refusal a person reads as one line: its failure carries the message and no Python
    stack trace (the failure converter copies ``__traceback__``, which reads None here)."""

    def __init__(self, message: str) -> None:
        super().__init__(message, type="Refused", non_retryable=True)

    @property  # type: ignore[override]
    def __traceback__(self) -> None:  # noqa: PLW3201 - the point of the class
        return None

    @__traceback__.setter
    def __traceback__(self, value: Any) -> None:
        pass


def parse_decision(payload: Any, *, digest: bool = True) -> ApprovalDecision | str:
    """The decision a payload carries, or why it carries none, in one line naming the fields.
    ``digest``: a payload without one is refused here (the signal leaves that to the workflow,
    which takes one without from a run of the previous release)."""
    if isinstance(payload, ApprovalDecision):
        return payload
    if not isinstance(payload, dict):
        shown = json.dumps(payload, default=str)[:80]
        return f"the payload must be a JSON object, not {shown}: {{{FIELDS}}}"
    unknown = sorted(set(payload) - set(ApprovalDecision.model_fields))
    if unknown:
        return f"unknown field {unknown[0]!r}; the fields are {FIELDS}"
    problems = [] if "digest" in payload or not digest else ['"digest" is required']
    try:
        decision = ApprovalDecision.model_validate(payload)
    except ValidationError as err:
        problems[:0] = [
            f'"{".".join(str(p) for p in e["loc"])}" {"is required" if e["type"] == "missing" else e["msg"].lower()}'
            for e in err.errors(include_url=False)
        ]
        return f"{'; '.join(problems)}; the fields are {FIELDS}"
    return f"{problems[0]}; the fields are {FIELDS}" if problems else decision


def interjection_refused(payload: Any, ended: TaskOutcome | None) -> str | None:
    """Why the ``interject_checked`` update refuses ``payload``, or None: a task that has ended
    (closing: recording its session, say) reads no more messages; a malformed one is named."""
    if ended is not None:
        return f"the task has ended ({ended.status.value}) and reads no more messages"
    problem = parse_interjection(payload)
    return f"interjection refused: {problem}" if isinstance(problem, str) else None


def parse_interjection(payload: Any) -> Interjection | str:
    """The interjection a signal or update carries (its raw payload, or the value itself), or
    why it carries none, in one line naming the fields."""
    if isinstance(payload, RawValue):
        encoding = payload.payload.metadata.get("encoding", b"").decode(errors="replace")
        if encoding != "json/plain":
            return f"the payload must be JSON, not {encoding or 'unmarked'} data"
        try:
            payload = json.loads(payload.payload.data.decode("utf-8"))
        except UnicodeDecodeError as err:
            return f"the payload is not UTF-8 text ({err.reason} at byte {err.start}): {{{INTERJECTION_FIELDS}}}"
        except ValueError as err:
            return f"the payload is not JSON ({err}): {{{INTERJECTION_FIELDS}}}"
    if isinstance(payload, Interjection):
        return payload
    if not isinstance(payload, dict) or set(payload) - set(Interjection.model_fields):
        shown = json.dumps(payload, default=str)[:80]
        return f"the payload must be a JSON object of {{{INTERJECTION_FIELDS}}}, not {shown}"
    try:
        return Interjection.model_validate(payload)
    except ValidationError as err:
        first = err.errors(include_url=False)[0]
        return f'"{".".join(map(str, first["loc"]))}" {first["msg"].lower()}: {{{INTERJECTION_FIELDS}}}'


def payload_for(pending: PendingApproval, approved: bool = True, **extra: Any) -> str:
    """The JSON a person sends to decide ``pending``."""
    return json.dumps({"approved": approved, "digest": pending.digest, **extra})


def approval_details(pending: PendingApproval, shown: str, workflow_id: str) -> str:
    """The Temporal UI's current details of a task waiting for ``pending``: the call ``shown`` in full (code, so Markdown cannot alter them), its danger and why, and how
    to decide it: the update's payload, and the same from a terminal (broken into short
    lines: the UI does not wrap code)."""
    why = f"{pending.danger}: {pending.reason}"
    update = (f"temporal workflow update execute \\\n  --workflow-id {shlex.quote(workflow_id)} --name decide \\\n"
              f"  --input {shlex.quote(payload_for(pending))}")
    lines = [
        code_span(f"waiting_approval: {pending.tool}"), "", code_block(shown), "", f"Why it asks: {code_span(why)}", "",
        "To approve here: More Actions → Send an Update; Name `decide`; Data: this payload "
        '(`"approved": false` denies; add `"reason"` and `"decided_by"` to say why and who):',
        "", code_block(payload_for(pending)), "",
        "then press Random UUID (without an Update ID the dialog sends nothing) and Submit.", "",
        "or from a terminal:", "", code_block(f"{update}\npython starter.py approve {shlex.quote(workflow_id)} \\\n"
                                              f"  --call {shlex.quote(pending.call_id)}"),
    ]
    if pending.rule:
        lines += ["", f'`"remember": true` with an approval also allows {code_span(pending.rule)} '
                      "for the rest of this task."]
    return "\n".join(lines)

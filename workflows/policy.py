"""The loop's fixed rules: timeouts, retry policies, engine texts, activity summaries, and
the current details the Temporal UI shows."""

from __future__ import annotations

from datetime import timedelta

from pydantic import ValidationError
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutType
from temporalio.exceptions import TimeoutError as ActivityTimeout

from contracts.task import TaskOutcome, TaskState
from core.markdown import code_block, code_span
from core.messages import ToolCallRequest
from core.text import shorten as core_shorten

# The release every new run records as its first command (one patch marker): the changes
# since the previous release branch on it. Runs started on the previous release still replay
# (its marker is deprecated); older ones do not. The lifecycle is in docs/patches.md.
RELEASE_PATCH = "release-2026-11-26"
PREVIOUS_RELEASE = "release-2026-11-25"

PLAN_STALE_TURNS = 5  # remind the model of its plan after this many turns without an update

# A call lost with a dead worker is noticed by its missing heartbeat and retried.
HEARTBEAT_TIMEOUT = timedelta(seconds=10)
LLM_TIMEOUT = timedelta(minutes=10)
TOOL_TIMEOUT = timedelta(hours=1, minutes=5)  # the shell tool caps commands at one hour
LOCAL_TOOL_TIMEOUT = timedelta(seconds=30)  # a local tool call (a read): quick by declaration
STORE_TIMEOUT = timedelta(minutes=1)
REDACT_TIMEOUT = timedelta(seconds=30)
# How long a call waits for the worker whose cache is warm before going to any worker.
AFFINITY_WAIT = timedelta(seconds=5)

# Temporal owns retries, so every attempt is visible in the history.
LLM_RETRY = RetryPolicy(
    initial_interval=timedelta(seconds=1),
    backoff_coefficient=2.0,
    maximum_interval=timedelta(seconds=60),
    maximum_attempts=8,
)
TOOL_RETRY = RetryPolicy(initial_interval=timedelta(seconds=1), maximum_attempts=3)
NO_RETRY = RetryPolicy(maximum_attempts=1)
BROWSER_CLOSE_TIMEOUT = timedelta(seconds=30)

NO_TOOL_CALL_REMINDER = (
    "Your last reply did not call a tool. Every reply must be exactly one tool call. "
    "To talk to the user use `message` with type `info`; when the task is complete call "
    "`message` with type `result` and the final answer."
)
DENIED_BY_RULE = (
    "[denied by rule {rule}] This call was not run: the task's permission rules{source} forbid it. "
    "Do not try to reach the same end another way; if it is needed, ask the user."
)
DEFERRED_RESULT = (
    "[not executed] Only one tool call runs per turn and this one was deferred. "
    "Call it again in a later turn if it is still needed."
)
INTERRUPTED_BY_USER = "[interrupted] The user sent a new message while this ran, so it was cancelled."
INTERRUPTED_BY_STOP = "[interrupted] The task was stopped while this ran."
# patched(): runs of this release run a reply's reads together, so fewer calls are deferred.
DEFERRED_AFTER_READS = (
    "[not executed] A reply's reads run together, but only one call that changes something "
    "runs per turn (with the reads around it): this one was deferred. Call it again in a "
    "later turn if it is still needed."
)
VERIFY_REMINDER = (
    "Before this task ends, check that it is done. You were asked: {asked}\n"
    "Since the task started (or since the last check) it changed: {changes}.\n"
    "Run what proves the work is right (the tests, the build, the script; read back what you "
    "wrote) and read the output. Fix what is wrong; then send `message` type `result` again. "
    "If you already checked, send the result again now."
)
VERIFY_INSTRUCTION_CHARS = 300  # the instruction as the reminder quotes it
VERIFY_CHANGES_SHOWN = 12  # the changes it lists; more are counted


def verify_reminder(instruction: str, changes: list[str]) -> str:
    """The verification reminder: what was asked (shortened), what changed (names only)."""
    shown = ", ".join(changes[:VERIFY_CHANGES_SHOWN])
    if len(changes) > VERIFY_CHANGES_SHOWN:
        shown += f" and {len(changes) - VERIFY_CHANGES_SHOWN} more"
    asked = shorten(" ".join(instruction.split()), VERIFY_INSTRUCTION_CHARS)
    return VERIFY_REMINDER.format(asked=asked, changes=shown)


def change_line(call: ToolCallRequest) -> str:
    """A call that changed something, as the verification reminder names it: the tool and
    its detail, shortened (a command line, a file's action and path; never its contents)."""
    return tool_summary(call).removeprefix("tool · ")


def plan_reminder(plan: list, turns_since: int) -> str:
    current = next((i for i in plan if i.status == "in_progress"), None) or next(
        (i for i in plan if i.status == "pending"), None
    )
    step = f"The current step is {current.id}. {current.desc} ({current.status})." if current else ""
    return (
        f"Your plan has not been updated for {turns_since} turns. {step} When a step is done, mark it "
        "completed with the plan tool; if the plan no longer fits the task, change it."
    )


def _root_cause(err: ActivityError) -> BaseException | None:
    """The failure under an activity error's wrappers (Temporal nests one per layer)."""
    cause = err.cause
    while isinstance(cause, ActivityError) and cause.cause is not None:
        cause = cause.cause
    return cause


def cause_message(err: ActivityError) -> str:
    cause = _root_cause(err)
    if isinstance(cause, ApplicationError):
        return cause.message
    return str(cause or err)


def failover_retry(attempts: int) -> RetryPolicy:
    """The LLM retry policy while another model is left in the chain: fewer attempts here."""
    return RetryPolicy(
        initial_interval=LLM_RETRY.initial_interval,
        backoff_coefficient=LLM_RETRY.backoff_coefficient,
        maximum_interval=LLM_RETRY.maximum_interval,
        maximum_attempts=attempts,
    )


def retryable_failure(err: ActivityError) -> bool:
    """True when the activity failed for a reason another model might not have (retries ran
    out on a retryable error, or timed out); False for auth, bad requests and the like."""
    cause = _root_cause(err)
    if isinstance(cause, ApplicationError):
        return not cause.non_retryable
    return True


def never_started(err: ActivityError) -> bool:
    """The call timed out waiting to be picked up (its worker is gone): it never ran."""
    cause = _root_cause(err)
    return isinstance(cause, ActivityTimeout) and cause.type == TimeoutType.SCHEDULE_TO_START


def failed_outcome(err: Exception) -> TaskOutcome | None:
    """The outcome a failed task's workflow carries in its ApplicationError's details."""
    cause = err if isinstance(err, ApplicationError) else getattr(err, "cause", None)
    if isinstance(cause, ApplicationError) and cause.details:
        try:
            return TaskOutcome.model_validate(cause.details[0])
        except ValidationError:
            return None
    return None


def stated_window(err: ActivityError) -> int | None:
    """The window a context-overflow failure says the server has (its details), if any."""
    cause = _root_cause(err)
    if isinstance(cause, ApplicationError) and cause.details and isinstance(cause.details[0], dict):
        value = cause.details[0].get("context_window")
        return value if isinstance(value, int) and value > 0 else None
    return None


def error_type(err: ActivityError) -> str | None:
    cause = _root_cause(err)
    return cause.type if isinstance(cause, ApplicationError) else None


def shorten(text: str, limit: int = 60) -> str:
    return core_shorten(text, limit, ellipsis="...")


def tool_detail(call: ToolCallRequest) -> str:
    """The call's detail as the tool declares it (``call.summary``, set by the LLM activity:
    a shell call's command, a file call's action and path); a call without one (of a tool
    the task does not offer) gives its arguments but file contents."""
    if call.summary is not None:
        return call.summary
    return " ".join(str(v) for k, v in call.arguments.items() if k not in ("content", "new", "old"))


def tool_summary(call: ToolCallRequest) -> str:
    """``tool · shell · ls -la``, ``tool · file · read notes.md``: what the Temporal UI shows."""
    return f"tool · {call.name} · {shorten(tool_detail(call))}".rstrip(" ·")


def current_details(phase: TaskState, activity: str, call: ToolCallRequest | None = None) -> str:
    """The Temporal UI's current details, which it renders as Markdown: so in code, where
    ``__`` and ``--`` stay as they are. A call about to run (or waiting for approval) is
    shown in full in a block of its own: what a person approves is exactly what runs."""
    phase_name = phase.value.lower()
    if call is None:
        return code_span(f"{phase_name}: {activity}" if activity else phase_name)
    return f"{code_span(f'{phase_name}: {call.name}')}\n\n{code_block(tool_detail(call))}"

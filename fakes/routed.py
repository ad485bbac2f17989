"""Many scripted models behind one local server: one script per task, told apart by workspace.

Evals run many trials at once against one worker, so one model server answers them all.
``RoutedModelServer`` is a ``ScriptedModelServer`` (the same OpenAI, Anthropic and Responses
wires, strict checks included) whose steps are kept per route: a route is a workspace path,
and a request belongs to the route named in its system prompt (``- Workspace: PATH``, the
environment segment every task's prompt carries, sub-agents' included). Each trial runs in a
workspace of its own, so its requests reach its own script and no other.

Within a route the steps are served in order, and the same request twice gets the same
answer: a model call retried after its worker died mid-call (the request is rebuilt from
the same context) is answered as it was the first time, not with the next step. A request
that carries more of the model's own answers than the route has served (a harness restarted
while its trials ran on) resumes the script after them.

``steps_from_turns`` makes steps of recorded model answers (``TurnResult``, the LLM
activity's result in a task's history): the replay provider of recorded evals.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from core.messages import TurnResult, thinking_text
from fakes.scripted import ScriptedModelServer
from fakes.step import Step

WORKSPACE_LINE = re.compile(r"^- Workspace: (.+)$", re.MULTILINE)


@dataclass
class Route:
    steps: list[Step]
    served: int = 0  # steps handed out so far
    answered: dict[str, int] = field(default_factory=dict)  # request digest -> step index
    problems: list[str] = field(default_factory=list)


class RoutedModelServer(ScriptedModelServer):
    def __init__(self, *, name: str = "routed", strict: bool = True) -> None:
        super().__init__((), name=name, strict=strict)
        self.routes: dict[str, Route] = {}

    def __enter__(self) -> RoutedModelServer:
        self.start()
        return self

    def route(self, workspace: str, steps: Sequence[Step]) -> None:
        """Answer requests of the task working in ``workspace`` with ``steps``, in order."""
        with self._cond:
            self.routes[workspace] = Route(list(steps))

    def problems(self, workspace: str) -> list[str]:
        """Calls of that route the script could not answer (it ran short)."""
        with self._cond:
            route = self.routes.get(workspace)
            return list(route.problems) if route else []

    def _take(
        self, body: dict[str, Any] | None, problem: str | None, headers: dict[str, str] | None = None
    ) -> tuple[int, Step | None, int, str]:
        workspace = request_workspace(body) if body is not None else None
        with self._cond:
            self._calls += 1
            if body is not None:
                self.requests.append(body)
            route = self.routes.get(workspace or "")
            if problem is None and route is None:
                problem = f"{self.name} model: no script for workspace {workspace!r}"
            if problem is not None or route is None or body is None:
                self.unexpected.append(problem or "no route")
                return self._calls, None, 0, problem or "no route"
            digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
            index = route.answered.get(digest)
            if index is None:
                index = max(route.served, answers_in(body))
                route.answered[digest] = index
                route.served = max(route.served, index + 1)
            if index >= len(route.steps):
                problem = f"{self.name} model: the script of {workspace} has {len(route.steps)} steps; call #{index + 1}"
                route.problems.append(problem)
                return self._calls, None, 0, problem
            # The step's number names its tool calls (call_<n>_<i>): unique within the route.
            return index + 1, route.steps[index].model_copy(update={"hold": False}), 0, ""


def request_workspace(body: dict[str, Any]) -> str | None:
    """The workspace named in a request's system prompt, on any of the wires."""
    parts: list[Any] = [body.get("system"), body.get("instructions")]
    messages = body.get("messages")
    if isinstance(messages, list):
        parts += [m.get("content") for m in messages if isinstance(m, dict) and m.get("role") in ("system", "developer")]
    for text in _strings(parts):
        found = WORKSPACE_LINE.search(text)
        if found:
            return found.group(1).strip()
    return None


def answers_in(body: dict[str, Any]) -> int:
    """How many of the model's own answers the request carries (its assistant messages)."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return 0
    return sum(1 for m in messages if isinstance(m, dict) and m.get("role") == "assistant")


def _strings(value: Any) -> list[str]:
    if isinstance(value, str):
        return [value]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    if isinstance(value, dict):
        return _strings(value.get("text")) + _strings(value.get("content"))
    return []


def steps_from_turns(turns: Sequence[TurnResult]) -> list[Step]:
    """Recorded model answers as scripted steps: the same text, reasoning, tool calls (their
    arguments as parsed, or the raw text of ones that did not parse) and token counts."""
    steps = []
    for turn in turns:
        calls: list[tuple[str, dict[str, Any] | str]] = [
            (c.name, c.arguments_raw if c.parse_error and c.arguments_raw is not None else c.arguments)
            for c in turn.tool_calls
        ]
        usage = turn.usage
        steps.append(Step(
            text=turn.content,
            tool_calls=calls,
            reasoning=thinking_text(turn.thinking) or None,
            usage=(usage.input_tokens, usage.output_tokens),
            cache=(usage.cache_read_tokens, 0),
            report_usage=not usage.estimated,
        ))
    return steps

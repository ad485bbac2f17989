"""The rubric grader: a judge model reads the trial and says whether it meets the rubric.

The judge is called through the project's own providers (``providers.factory``), on any of
their modes, with one tool, ``verdict``, to answer with; a reply without it is read for a
last PASS or FAIL. A judge that cannot be reached fails the grader (it says so), so a
broken judge never passes a suite.
"""

from __future__ import annotations

import re

from core.messages import ChatMessage, LlmRequest, SystemPrompt, ToolSpec
from core.settings import ProviderSettings
from core.text import shorten
from evals.graders import RubricGrader, Trial, Verdict
from evals.suite import JudgeConfig
from providers.errors import ProviderError
from providers.factory import Provider, make_provider

SYSTEM = """\
You grade the work of an AI agent. You get the task it was given, a transcript of what it did
(its messages, tool calls and their results), how it ended, and a rubric. Decide whether the
work meets the rubric: judge only what the transcript shows, and be strict. Answer by calling
the tool `verdict` once."""

VERDICT = ToolSpec(
    name="verdict",
    description="Your grade: whether the agent's work meets the rubric, and why in one or two sentences.",
    parameters={
        "type": "object",
        "properties": {
            "passed": {"type": "boolean", "description": "true when the work meets the rubric"},
            "reason": {"type": "string", "description": "why, briefly"},
        },
        "required": ["passed", "reason"],
        "additionalProperties": False,
    },
)
PLAIN = re.compile(r"\b(PASS|FAIL)(?:ED)?\b")


class Judge:
    def __init__(self, config: JudgeConfig, settings: ProviderSettings) -> None:
        self.config = config
        self.settings = settings
        self._provider: Provider | None = None

    async def grade(self, grader: RubricGrader, trial: Trial) -> Verdict:
        outcome = trial.outcome
        ending = f"It ended {outcome.status.value}" + (
            f" with the final answer:\n{outcome.final_text}" if outcome.final_text else
            f": {outcome.error}" if outcome.error else "")
        prompt = (f"<transcript>\n{trial.transcript.text()}\n</transcript>\n\n{ending}\n\n"
                  f"<rubric>\n{grader.rubric}\n</rubric>")
        request = LlmRequest(
            model=self.config.model, system=SystemPrompt(stable=SYSTEM),
            messages=[ChatMessage(role="user", content=prompt)], tools=[VERDICT], max_tokens=1024,
        )
        try:
            if self._provider is None:
                self._provider = make_provider(self.config.provider, self.settings)
            answer = await self._provider.complete(request)
        except (ProviderError, ValueError) as err:
            return Verdict(kind="rubric", passed=False, detail=f"the judge ({self.config.model}) failed: {err}")
        for call in answer.tool_calls:
            if call.name == VERDICT.name and isinstance(call.arguments.get("passed"), bool):
                reason = str(call.arguments.get("reason") or "")
                return Verdict(kind="rubric", passed=call.arguments["passed"], detail=_said(reason))
        found = PLAIN.findall(answer.content.upper())
        if found:
            return Verdict(kind="rubric", passed=found[-1] == "PASS", detail=_said(answer.content))
        return Verdict(kind="rubric", passed=False, detail=f"the judge gave no verdict: {_said(answer.content)}")

    async def aclose(self) -> None:
        if self._provider is not None:
            await self._provider.aclose()


def _said(text: str) -> str:
    return f"judge: {shorten(text, 300)}"

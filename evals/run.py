"""Run a suite: every case K times, each trial a task workflow in a fresh copy of its workspace.

Trials run in parallel up to ``concurrency``, on a worker in this process (the embedded
server, or an offline model) or on the cluster's workers. A trial's workflow id is
``eval-<run id>-<case>-<trial>``, started at most once: a harness started again with the
same run id takes up the trials already there (finished ones are read, running ones
followed) and starts only the rest, so every trial is counted once, whatever crashed.

Offline, one local model server (fakes/routed.py) answers every trial from its case's
``script`` (``--demo``) or recorded answers (``--replay``), told apart by workspace.
"""

from __future__ import annotations

import asyncio
import fnmatch
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

from temporalio.client import Client, WorkflowFailureError, WorkflowHandle
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import CancelledError, TerminatedError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from contracts.task import TaskInput, TaskOutcome, TaskState
from core.markdown import code_span
from core.settings import ModelTableSettings, ProviderSettings, Settings
from evals.graders import RubricGrader, Trial, Verdict, grade_code
from evals.judge import Judge
from evals.metrics import Report, Skipped, TrialResult, case_report, overall
from evals.people import ANSWER_WAIT, Person
from evals.suite import Case, JudgeConfig, Suite, SuiteError, load_recording
from evals.transcript import read_transcript
from fakes.routed import RoutedModelServer, steps_from_turns
from providers.model_table import context_window, load_models
from runtime.paths import data_dir
from runtime.secrets import SecretStore
from runtime.store import open_store
from temporal.client import ensure_search_attributes, is_embedded
from tools import sandbox
from worker import build_worker, task_queue
from workflows.policy import failed_outcome
from workflows.task import AgentTaskWorkflow

Mode = Literal["model", "script", "replay"]
SCRIPTED_MODEL = "demo-scripted"
STOP_GRACE_S = 60.0  # after a trial's time limit: how long its stop may take before it is terminated


class EvalError(Exception):
    """Something the user can fix (a bad option, no case to run): one line."""


class Progress(Protocol):
    def started(self, total: int) -> None: ...

    def finished(self, result: TrialResult) -> None: ...


@dataclass
class EvalOptions:
    settings: Settings  # the process's, read by its entry point (starter.py)
    trials: int = 1
    k: int | None = None  # pass@k and pass^k at this k (default: trials)
    concurrency: int = 4
    mode: Mode = "model"
    model: str = SCRIPTED_MODEL
    provider: str = "openai"
    stream: bool = False
    queue: str | None = None  # default: the configured task queue (model), eval-<run id> (offline)
    local_worker: bool = True  # run a worker in this process (else the cluster's serve the queue)
    worker_settings: ProviderSettings | None = None  # the local worker's providers (None: settings.providers)
    judge: JudgeConfig | None = None  # default: the suite's, else the model under test (model mode)
    judge_settings: ProviderSettings | None = None  # None: settings.providers
    run_id: str | None = None  # the same id again takes up that run's trials
    workdir: Path | None = None  # default: <data dir>/evals/<run id>
    only: list[str] = field(default_factory=list)  # case names or globs
    model_server: RoutedModelServer | None = None  # offline: a server already running (else one is started)
    ui_link: Callable[[str], str] = lambda workflow_id: ""


async def run_suite(client: Client, suite: Suite, options: EvalOptions, progress: Progress | None = None) -> Report:
    cases, skipped = select(suite, options)
    if not cases:
        raise EvalError(f"no case of {suite.title} runs in {options.mode} mode"
                        + (f" ({skipped[0].case}: {skipped[0].why})" if skipped else ""))
    k = options.k or options.trials
    if not 1 <= k <= options.trials:
        raise EvalError(f"k must be between 1 and the number of trials ({options.trials}), got {k}")
    run_id = options.run_id or new_run_id(suite.title)
    report = Report(suite=suite.title, run_id=run_id, mode=options.mode, model=options.model,
                    provider=options.provider, trials=options.trials, k=k, skipped=skipped)
    began = time.monotonic()
    async with AsyncExitStack() as stack:
        server, settings, queue = None, options.worker_settings, options.queue
        if options.mode != "model":
            server = options.model_server or stack.enter_context(RoutedModelServer(name=options.mode))
            settings = ProviderSettings(openai_base_url=server.url, openai_api_key=None,
                                        anthropic_base_url=server.anthropic_url)
            queue = queue or f"eval-{run_id}"  # only this harness's worker serves it
        queue = queue or task_queue(options.settings.temporal)
        if options.local_worker:
            await start_worker(stack, client, queue, settings, options.settings)
        judge_config = options.judge or suite.judge or (
            JudgeConfig(model=options.model, provider=options.provider) if options.mode == "model" else None)
        judge_settings = options.judge_settings or options.settings.providers
        judge = Judge(judge_config, judge_settings) if judge_config else None
        if judge:
            stack.push_async_callback(judge.aclose)
        runner = TrialRunner(client, suite, options, run_id, queue, server, judge,
                             await ensure_search_attributes(client, register=is_embedded(options.settings.temporal)))
        plan = [(case, trial) for trial in range(1, options.trials + 1) for case in cases]
        if progress:
            progress.started(len(plan))
        limit = asyncio.Semaphore(options.concurrency)

        async def one(case: Case, trial: int) -> TrialResult:
            async with limit:
                result = await runner.run(case, trial)
            if progress:
                progress.finished(result)
            return result

        results = await asyncio.gather(*(one(case, trial) for case, trial in plan))
    report.cases = [case_report(c.name, [r for r in results if r.case == c.name], k) for c in cases]
    report.overall = overall(report.cases)
    report.wall_s = time.monotonic() - began
    return report


def select(suite: Suite, options: EvalOptions) -> tuple[list[Case], list[Skipped]]:
    cases, skipped = [], []
    for case in suite.cases:
        if options.only and not any(fnmatch.fnmatchcase(case.name, p) for p in options.only):
            continue
        if options.mode == "script" and case.script is None:
            skipped.append(Skipped(case=case.name, why="no script for the scripted model: run it with a model"))
        elif options.mode == "replay" and case.replay is None:
            skipped.append(Skipped(case=case.name, why="not recorded: nothing to replay"))
        else:
            cases.append(case)
    return cases, skipped


def new_run_id(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")[:24] or "suite"
    return f"{slug}-{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:4]}"


async def start_worker(stack: AsyncExitStack, client: Client, queue: str, settings: ProviderSettings | None,
                       config: Settings) -> None:
    """A worker in this process for the trials' task queue, until the stack closes."""
    try:
        box = sandbox.status(config.sandbox)
    except (sandbox.SandboxUnavailable, ValueError) as err:
        raise EvalError(str(err)) from None
    if not box.active:
        print(box.notice(), file=sys.stderr)
    store = open_store(config.store, config.paths)
    await store.check()
    stack.push_async_callback(store.close)
    await stack.enter_async_context(build_worker(client, queue=queue, settings=settings, store=store, config=config))


class TrialRunner:
    def __init__(self, client: Client, suite: Suite, options: EvalOptions, run_id: str, queue: str,
                 server: RoutedModelServer | None, judge: Judge | None, search_attributes: bool) -> None:
        self.client, self.suite, self.options, self.run_id, self.queue = client, suite, options, run_id, queue
        self.server, self.judge, self.search_attributes = server, judge, search_attributes
        self.root = (options.workdir or data_dir(options.settings.paths) / "evals" / run_id).resolve()
        self.secrets = SecretStore.from_settings(options.settings.secrets)

    async def run(self, case: Case, trial: int) -> TrialResult:
        workflow_id = f"eval-{self.run_id}-{case.name}-{trial}"
        workspace = self.root / f"{case.name}.{trial}"
        base = TrialResult(case=case.name, trial=trial, workflow_id=workflow_id, ui=self.options.ui_link(workflow_id),
                           workspace=str(workspace), state="ERROR", passed=False)
        try:
            return await self._run(case, workflow_id, workspace, base)
        except (RPCError, SuiteError, OSError) as err:
            return base.model_copy(update={"reason": f"the harness failed: {err}"})

    async def _run(self, case: Case, workflow_id: str, workspace: Path, base: TrialResult) -> TrialResult:
        handle = self.client.get_workflow_handle(workflow_id, result_type=TaskOutcome)
        person = Person(case, handle)
        inp = self._input(case, workspace)
        if self.server is not None:
            self.server.route(inp.workspace, self._steps(case))
        if await _exists(handle):  # a trial of this run started before: take it up as it is
            person.resume(await read_transcript(self.client, workflow_id))
        else:
            prepare_workspace(self.suite, case, workspace)
            try:
                await self.client.start_workflow(
                    AgentTaskWorkflow.run, inp, id=workflow_id, task_queue=self.queue,
                    id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                    id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
                    memo={"instruction": inp.instruction[:2000], "workspace": inp.workspace, "model": inp.model,
                          "eval": self.run_id, "case": case.name},
                    static_summary=code_span(f"eval {self.run_id} · {case.name} #{base.trial}: {inp.instruction[:150]}"),
                )
            except WorkflowAlreadyStartedError:
                pass  # started (and finished) between the look and the start: it is that trial
        outcome = await follow(handle, person, case.limits.timeout_s)
        transcript = await read_transcript(self.client, workflow_id)
        graded = Trial(outcome=outcome, transcript=transcript, workspace=workspace)
        verdicts = [await self._grade(g, graded) for g in case.graders]
        failed = [v.detail or v.kind for v in verdicts if v.passed is False]
        if self.server is not None:
            failed += [f"the model's script ran out ({p})" for p in self.server.problems(inp.workspace)[:1]]
        desc = await handle.describe()
        wall = (desc.close_time - desc.start_time).total_seconds() if desc.close_time and desc.start_time else 0.0
        return base.model_copy(update=dict(
            state=outcome.status.value, passed=not failed and any(v.passed for v in verdicts),
            reason="; ".join(failed[:3]) or ("" if any(v.passed for v in verdicts) else "no grader gave a verdict"),
            turns=outcome.turns, tokens=outcome.usage.total_tokens, cost_usd=outcome.cost_usd, wall_s=wall,
            graders=verdicts,
        ))

    async def _grade(self, grader, trial: Trial) -> Verdict:
        if not isinstance(grader, RubricGrader):
            return await grade_code(grader, trial)
        if self.judge is None:
            return Verdict(kind="rubric", passed=None, detail="skipped: no judge model (--judge-model)")
        return await self.judge.grade(grader, trial)

    def _input(self, case: Case, workspace: Path) -> TaskInput:
        model, provider = self.options.model, self.options.provider
        if self.options.mode == "replay":
            model, provider = load_recording(self.suite, case).model, "openai"  # the replay server's wire
        elif self.options.mode == "script":
            provider = "openai"
        return TaskInput(
            instruction=self.secrets.redact(case.instruction), workspace=str(workspace), model=model,
            provider=provider, max_iterations=case.limits.turns, cost_limit_usd=case.limits.cost,
            approval=case.approval_mode, stream=self.options.stream, search_attributes=self.search_attributes,
            context_window=case.limits.context_window or model_window(model, self.options.settings.models),
            # A script or a recording holds the turns it answers: a verification reminder would
            # ask for one it lacks. A model verifies as a task would.
            verify="auto" if self.options.mode == "model" else "off",
        )

    def _steps(self, case: Case):
        if self.options.mode == "replay":
            return steps_from_turns(load_recording(self.suite, case).turns)
        return [step.step() for step in case.script or []]


def prepare_workspace(suite: Suite, case: Case, dest: Path) -> None:
    """A fresh copy of the case's workspace: its directory (if any), then its files."""
    if dest.exists():
        shutil.rmtree(dest)
    if case.workspace:
        source = suite.resolve(case.workspace)
        if not source.is_dir():
            raise SuiteError(f"case {case.name}: workspace {source} is not a directory")
        shutil.copytree(source, dest, symlinks=True)
    else:
        dest.mkdir(parents=True)
    for relative, content in case.files.items():
        path = dest / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")


async def follow(handle: WorkflowHandle, person: Person, timeout_s: float) -> TaskOutcome:
    """The trial's outcome, with the person acting on it meanwhile; a trial past its time
    limit is stopped (and terminated if even that does not end it)."""
    attending = asyncio.create_task(person.attend())
    try:
        try:
            return await asyncio.wait_for(outcome_of(handle), timeout_s)
        except TimeoutError:
            await handle.signal(AgentTaskWorkflow.stop, f"the eval's time limit of {timeout_s:g} s passed")
        try:
            return await asyncio.wait_for(outcome_of(handle), STOP_GRACE_S)
        except TimeoutError:
            await handle.terminate(reason=f"the eval's time limit of {timeout_s:g} s passed")
            return await outcome_of(handle)
    finally:
        person.done()
        try:
            await asyncio.wait_for(attending, ANSWER_WAIT.total_seconds() + 1)
        except TimeoutError:
            pass  # wait_for has cancelled it


async def outcome_of(handle: WorkflowHandle) -> TaskOutcome:
    try:
        return await handle.result()
    except WorkflowFailureError as err:
        found = failed_outcome(err)
        if found is not None:
            return found
        cause = err.cause
        if isinstance(cause, CancelledError):
            return TaskOutcome(status=TaskState.CANCELLED, error="cancelled")
        if isinstance(cause, TerminatedError):
            return TaskOutcome(status=TaskState.TERMINATED, error=f"terminated: {cause.message}")
        return TaskOutcome(status=TaskState.FAILED, error=f"workflow failed: {cause}")


async def _exists(handle: WorkflowHandle) -> bool:
    try:
        await handle.describe()
    except RPCError as err:
        if err.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


def model_window(model: str, tables: ModelTableSettings) -> int:
    """The model's context window, by the model table (providers/model_table.py, ``AGENT_MODELS_FILE``)."""
    return context_window(model, load_models(tables))

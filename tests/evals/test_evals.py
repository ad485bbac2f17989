"""Evals end to end on the test session's dev server: the CLI on the starter suite, isolation,
a worker killed mid-suite, a harness started again, record and replay, the judge."""

from __future__ import annotations

import asyncio
import json
import signal
import subprocess
from pathlib import Path

from contracts.task import ApprovalDecision, TaskInput, TaskState
from core.settings import ProviderSettings
from evals.metrics import TrialResult
from evals.run import EvalOptions, run_suite
from evals.suite import JudgeConfig, Suite, load_suite
from evals.transcript import read_transcript
from fakes.routed import RoutedModelServer
from fakes.scripted import ScriptedModelServer, tool
from fakes.step import Step
from tests import configured
from tests.cli.test_cli import cli
from tests.worker_processes import spawn_worker
from tests.workflows.harness import make_input, outcome_of, scripted_worker, start, wait_for_state
from workflows.task import AgentTaskWorkflow

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "evals" / "suites" / "starter.toml"


def appending_case(name: str, delay_s: float = 0.0) -> dict:
    """A case that passes only in a workspace of its own: it appends a line to log.txt."""
    return {
        "name": name, "instruction": "Append the line 'run' to log.txt.",
        "graders": [{"kind": "state"}, {"kind": "file", "path": "log.txt", "equals": "run"}],
        "script": [
            {"tool": "shell", "args": {"command": "echo run >> log.txt"}, "delay_s": delay_s},
            {"tool": "message", "args": {"type": "result", "text": "appended"}},
        ],
    }


def suite_of(tmp_path: Path, *cases: dict, name: str = "t") -> Suite:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps({"name": name, "cases": list(cases)}))
    return load_suite(path)


class Seen:
    def __init__(self, on_finish=None) -> None:
        self.total, self.results, self.on_finish = 0, [], on_finish

    def started(self, total: int) -> None:
        self.total = total

    def finished(self, result: TrialResult) -> None:
        self.results.append(result)
        if self.on_finish:
            self.on_finish(result)


async def test_eval_of_the_starter_suite_with_the_scripted_model_passes_every_case_and_writes_json(client, tmp_path):
    out = tmp_path / "report.json"
    code, stdout, stderr = await cli(client, "eval", str(STARTER), "--demo", "--trials", "2", "--concurrency", "6",
                                     "--json", str(out), "--min-pass", "1.0")
    assert code == 0, stderr + stdout
    assert "pass@2" in stdout and "pass^2" in stdout and "overall" in stdout
    report = json.loads(out.read_text())
    names = [case.name for case in load_suite(STARTER).cases]
    assert [case["name"] for case in report["cases"]] == names
    for case in report["cases"]:  # every case is expected to pass, twice
        assert (case["n"], case["passed"], case["pass_at_1"], case["pass_at_k"], case["pass_hat_k"]) == (
            2, 2, 1.0, 1.0, 1.0), case
        assert case["name"] in stdout
    assert report["overall"]["pass_at_1"] == 1.0 and report["k"] == 2 and report["skipped"] == []
    trial = report["cases"][0]["trials"][0]
    assert trial["ui"].endswith(f"/workflows/{trial['workflow_id']}") and trial["wall_s"] > 0
    haiku = next(c for c in report["cases"] if c["name"] == "haiku")["trials"][0]["graders"]
    assert haiku[-1]["kind"] == "rubric" and haiku[-1]["passed"] is None  # no judge offline: skipped


async def test_a_missed_min_pass_exits_non_zero_with_the_failure_reason_and_link(client, tmp_path):
    case = appending_case("wrong")
    case["graders"].append({"kind": "file", "path": "log.txt", "contains": "walk"})
    path = tmp_path / "fails.json"
    path.write_text(json.dumps({"cases": [case]}))
    code, stdout, stderr = await cli(client, "eval", str(path), "--demo", "--min-pass", "1.0", "--json", "-")
    assert code == 1, stderr
    report = json.loads(stdout)
    assert report["overall"]["pass_at_1"] == 0.0
    (trial,) = report["cases"][0]["trials"]
    assert trial["state"] == "DONE" and not trial["passed"]
    assert "log.txt does not contain 'walk'" in trial["reason"]
    assert "below --min-pass 1" in stderr and trial["ui"] in stderr
    code, _, _ = await cli(client, "eval", str(path), "--demo", "--min-pass", "0.0", "--json", "-")
    assert code == 0


async def test_trials_are_isolated_each_in_a_fresh_workspace_of_its_own(client, tmp_path):
    suite = suite_of(tmp_path, appending_case("append"), appending_case("append-too"))
    report = await run_suite(client, suite, EvalOptions(configured.settings(), trials=3, mode="script", workdir=tmp_path / "runs"))
    assert report.overall.passed == 6  # a shared workspace would hold two lines
    trials = [t for case in report.cases for t in case.trials]
    assert len({t.workspace for t in trials}) == 6 and len({t.workflow_id for t in trials}) == 6
    for t in trials:
        transcript = await read_transcript(client, t.workflow_id)
        assert isinstance(transcript.task, TaskInput) and transcript.task.workspace == t.workspace
        assert (Path(t.workspace) / "log.txt").read_text() == "run\n"


async def test_a_harness_started_again_with_the_run_id_counts_every_trial_once(client, tmp_path):
    suite = suite_of(tmp_path, appending_case("once"))
    options = EvalOptions(configured.settings(), trials=2, mode="script", run_id="again", workdir=tmp_path / "runs")
    first = await run_suite(client, suite, options)
    marker = Path(first.cases[0].trials[0].workspace) / "marker"
    marker.write_text("kept")  # a trial taken up is not copied afresh, nor run again
    second = await run_suite(client, suite, options)
    assert [t.workflow_id for t in second.cases[0].trials] == [t.workflow_id for t in first.cases[0].trials]
    assert second.overall.passed == 2 and marker.read_text() == "kept"


async def test_killing_the_worker_mid_suite_and_restarting_it_finishes_every_trial_once(client, task_queue, tmp_path):
    target = client.service_client.config.target_host
    cases = [appending_case(f"c{i}", delay_s=0.3) for i in range(3)]
    for case in cases:  # a command cut off by the kill is reported as interrupted, never run twice
        case["graders"][1] = {"kind": "command", "run": 'test "$(cat log.txt 2>/dev/null | wc -l)" -le 1'}
    suite = suite_of(tmp_path, *cases)
    workers: list[subprocess.Popen] = []
    killed = asyncio.Event()

    def kill_on_first(result: TrialResult) -> None:
        if not killed.is_set():
            workers[0].send_signal(signal.SIGKILL)  # mid-suite: one trial done, others running or waiting
            killed.set()

    with RoutedModelServer() as model:
        workers.append(spawn_worker(target, task_queue, model.url))
        try:
            options = EvalOptions(configured.settings(), trials=2, concurrency=2, mode="script", queue=task_queue, local_worker=False,
                                  model_server=model, workdir=tmp_path / "runs")
            seen = Seen(kill_on_first)
            running = asyncio.create_task(run_suite(client, suite, options, seen))
            await asyncio.wait_for(killed.wait(), 60)
            workers[0].wait(10)
            workers.append(spawn_worker(target, task_queue, model.url))
            report = await asyncio.wait_for(running, 90)
        finally:
            for proc in workers:
                if proc.poll() is None:
                    proc.send_signal(signal.SIGTERM)
                    proc.wait(15)
    assert len(seen.results) == seen.total == 6
    assert sorted((t.case, t.trial) for t in seen.results) == sorted((f"c{i}", n) for i in range(3) for n in (1, 2))
    assert [(c.n, c.passed) for c in report.cases] == [(2, 2)] * 3, [t.reason for t in report.failures()]
    assert report.overall.pass_at_1 == 1.0  # log.txt holds one line at most: no tool ran twice


async def test_a_recorded_task_replays_offline_to_the_same_outcome(client, task_queue, workspace, tmp_path):
    (workspace / "data.txt").write_text("alpha\n")
    (workspace / "junk").mkdir()
    (workspace / "junk" / "x.txt").write_text("x\n")
    steps = [
        Step(text="Looking around.", tool_calls=[("shell", {"command": "ls"})], usage=(120, 9)),
        tool("file", action="write", path="notes.md", content="# Notes\nalpha\n"),
        tool("shell", command="rm -rf junk"),  # dangerous: waits for approval
        tool("message", type="result", text="Wrote notes.md and removed junk/."),
    ]
    async with scripted_worker(client, task_queue, steps):
        handle = await start(client, task_queue, make_input(workspace, "tidy up and take notes"))
        pending = (await wait_for_state(handle, TaskState.WAITING_APPROVAL)).pending_approval
        assert pending is not None
        await handle.execute_update(AgentTaskWorkflow.decide, ApprovalDecision(
            approved=True, call_id=pending.call_id, digest=pending.digest, reason="fine"))
        original = await outcome_of(handle)
    assert original.status == TaskState.DONE
    suite_path = tmp_path / "regressions.toml"
    code, out, err = await cli(client, "record", handle.id, "--into", str(suite_path), "--name", "tidy")
    assert code == 0, err
    assert "eval" in out and "--replay --case tidy" in out
    (case,) = load_suite(suite_path).cases
    assert case.files == {"data.txt": "alpha\n", "junk/x.txt": "x\n"}  # as the task found it
    assert case.approvals[0].approve is True and case.instruction == "tidy up and take notes"  # type: ignore[index]
    kinds = [(g.kind, getattr(g, "path", None)) for g in case.graders]
    assert ("file", "notes.md") in kinds and ("file", "junk/x.txt") in kinds
    assert (suite_path.parent / "regressions.recorded" / "tidy.json").is_file()

    code, out, err = await cli(client, "eval", str(suite_path), "--replay", "--trials", "2", "--json", "-")
    assert code == 0, err
    report = json.loads(out)
    (result,) = report["cases"]
    assert (result["n"], result["passed"]) == (2, 2), [t["reason"] for t in result["trials"]]
    for trial in result["trials"]:
        assert trial["turns"] == original.turns and trial["tokens"] == original.usage.total_tokens
        assert trial["cost_usd"] == original.cost_usd
        replayed = Path(trial["workspace"])
        assert (replayed / "notes.md").read_text() == "# Notes\nalpha\n" and not (replayed / "junk").exists()


async def test_a_rubric_is_graded_by_a_judge_model_through_the_providers(client, tmp_path):
    cases = []
    for name in ("good", "bad"):
        case = appending_case(name)
        case["graders"].append({"kind": "rubric", "rubric": f"RUBRIC-{name}: the agent appended the line."})
        cases.append(case)
    suite = suite_of(tmp_path, *cases)
    verdicts = {
        "good": tool("verdict", passed=True, reason="it appended the line"),
        "bad": tool("verdict", passed=False, reason="the line is not what was asked"),
    }
    with ScriptedModelServer() as judge:
        options = EvalOptions(configured.settings(), mode="script", concurrency=1, workdir=tmp_path / "runs",
                              judge=JudgeConfig(model="judge-model"),
                              judge_settings=ProviderSettings(openai_base_url=judge.url, openai_api_key="k"))
        judge.add(verdicts["good"], verdicts["bad"])  # concurrency 1: the cases are graded in order
        report = await run_suite(client, suite, options)
        judge.assert_consumed()
    good, bad = report.cases
    assert good.passed == 1 and good.trials[0].graders[-1].detail == "judge: it appended the line"
    assert bad.passed == 0 and "the line is not what was asked" in bad.trials[0].reason
    asked = judge.requests[0]
    prompt = asked["messages"][-1]["content"]
    assert asked["model"] == "judge-model" and "RUBRIC-good" in prompt and "echo run >> log.txt" in prompt
    assert [t["function"]["name"] for t in asked["tools"]] == ["verdict"]

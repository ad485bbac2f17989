"""Evals without Temporal: pass@k and pass^k, suite files, the TOML writer, the routed model."""

from __future__ import annotations

import tomllib
from pathlib import Path

import httpx
import pytest

from core.messages import ToolCallRequest, TurnResult, Usage
from evals.graders import FileGrader, Trial, grade_code
from evals.metrics import TrialResult, case_report, overall, pass_at_k, pass_hat_k
from evals.record import toml_case
from evals.suite import Case, SuiteError, load_suite
from evals.transcript import Transcript
from fakes.routed import RoutedModelServer, request_workspace, steps_from_turns
from fakes.scripted import tool

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "evals" / "suites" / "starter.toml"


@pytest.mark.parametrize(("n", "c", "k", "at_k", "hat_k"), [
    (5, 2, 2, 1 - 3 / 10, 1 / 10),  # C(3,2)/C(5,2) = 3/10; C(2,2)/C(5,2) = 1/10
    (10, 3, 1, 0.3, 0.3),
    (10, 3, 5, 1 - 21 / 252, 0.0),  # C(7,5) = 21, C(10,5) = 252; fewer passes than k
    (4, 4, 4, 1.0, 1.0),
    (4, 0, 2, 0.0, 0.0),
    (3, 1, 3, 1.0, 0.0),  # n - c < k: some draw of 3 always holds the pass
    (6, 4, 3, 1.0, 4 / 20),  # C(2,3) = 0; C(4,3)/C(6,3) = 4/20
])
def test_pass_at_k_and_pass_hat_k_match_hand_computed_values(n, c, k, at_k, hat_k):
    assert pass_at_k(n, c, k) == pytest.approx(at_k)
    assert pass_hat_k(n, c, k) == pytest.approx(hat_k)


def test_pass_at_k_refuses_a_k_beyond_the_trials():
    with pytest.raises(ValueError):
        pass_at_k(2, 1, 3)


def test_a_case_report_and_the_overall_figures_are_means():
    def trial(case: str, n: int, passed: bool, turns: int) -> TrialResult:
        return TrialResult(case=case, trial=n, workflow_id=f"w{n}", state="DONE", passed=passed, turns=turns,
                           tokens=10 * turns, cost_usd=0.01 * turns, wall_s=1.0)

    a = case_report("a", [trial("a", 2, False, 4), trial("a", 1, True, 2)], k=2)
    b = case_report("b", [trial("b", 1, True, 1), trial("b", 2, True, 1)], k=2)
    assert [t.trial for t in a.trials] == [1, 2]
    assert (a.n, a.passed, a.pass_at_1, a.pass_at_k, a.pass_hat_k) == (2, 1, 0.5, 1.0, 0.0)
    assert a.mean_turns == 3 and a.mean_tokens == 30
    total = overall([a, b])
    assert (total.n, total.passed) == (4, 3)
    assert total.pass_at_1 == pytest.approx(0.75) and total.pass_hat_k == pytest.approx(0.5)
    assert total.mean_turns == pytest.approx(2.0) and total.mean_cost_usd == pytest.approx(0.02)


def test_the_starter_suite_has_fifteen_scripted_cases_of_every_kind():
    suite = load_suite(STARTER)
    assert len(suite.cases) >= 15 and all(case.script for case in suite.cases)
    kinds = {g.kind for case in suite.cases for g in case.graders}
    assert kinds >= {"state", "final_text", "file", "command", "tools", "dangerous", "turns", "cost", "compacted",
                     "rubric"}
    assert any(case.interjections for case in suite.cases)
    assert {case.approvals if isinstance(case.approvals, str) else "script" for case in suite.cases} >= {
        "approve", "deny", "script"}


def test_a_bad_suite_is_one_line_naming_the_file_and_the_field(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text('[[cases]]\nname = "x"\ninstruction = "do"\ngraders = [{ kind = "nope" }]\n')
    with pytest.raises(SuiteError) as err:
        load_suite(bad)
    assert str(err.value).startswith(f"{bad}: cases.0.graders.0") and "\n" not in str(err.value)
    twice = tmp_path / "twice.json"
    case = '{"name": "x", "instruction": "do", "graders": [{"kind": "state"}]}'
    twice.write_text(f'{{"cases": [{case}, {case}]}}')
    with pytest.raises(SuiteError, match="repeated: x"):
        load_suite(twice)
    escaping = tmp_path / "escape.toml"
    escaping.write_text('[[cases]]\nname = "x"\ninstruction = "do"\ngraders = [{ kind = "state" }]\n'
                        'files = { "../out.txt" = "no" }\n')
    with pytest.raises(SuiteError, match="relative path inside the workspace"):
        load_suite(escaping)


def test_a_case_written_as_toml_reads_back_the_same():
    case = Case.model_validate({
        "name": "odd-one", "instruction": 'quotes " and \\ and\nnewlines\t\x7f and ü',
        "files": {"a b/c.txt": "x\n", "plain": ""}, "limits": {"turns": 7, "cost": 0.5},
        "approvals": [{"approve": True}, {"approve": False, "reason": "no"}],
        "interjections": [{"turn": 2, "text": "stop"}],
        "graders": [{"kind": "file", "path": "c.txt", "equals": "x"}, {"kind": "cost", "max": 1e-05}],
        "script": [{"tool": "file", "args": {"action": "write", "nested": {"list": [1, 2.5, None, True]}}}],
        "replay": "r.json",
    })
    data = case.model_dump(mode="json", exclude_none=True)
    data["script"][0]["args"]["nested"]["list"] = [1, 2.5, True]  # TOML has no null
    text = toml_case(data)
    back = Case.model_validate(tomllib.loads(text)["cases"][0])
    assert back.model_dump(mode="json", exclude_none=True) == data


async def test_a_file_grader_never_reads_outside_the_workspace(tmp_path):
    (tmp_path / "secret.txt").write_text("x")
    workspace = tmp_path / "ws"
    workspace.mkdir()
    from contracts.task import TaskOutcome, TaskState

    trial = Trial(outcome=TaskOutcome(status=TaskState.DONE), transcript=Transcript(), workspace=workspace)
    verdict = await grade_code(FileGrader(path="../secret.txt", equals="x"), trial)
    assert verdict.passed is False and "outside the workspace" in verdict.detail


def test_recorded_turns_become_steps_with_their_text_calls_and_usage():
    turns = [
        TurnResult(content="looking", tool_calls=[ToolCallRequest(id="c1", name="shell", arguments={"command": "ls"})],
                   usage=Usage(input_tokens=120, output_tokens=7, cache_read_tokens=100)),
        TurnResult(tool_calls=[ToolCallRequest(id="c2", name="file", arguments_raw="{broken", parse_error="bad")],
                   usage=Usage(input_tokens=5, output_tokens=1, estimated=True)),
    ]
    first, second = steps_from_turns(turns)
    assert first.text == "looking" and first.tool_calls == [("shell", {"command": "ls"})]
    assert first.usage == (120, 7) and first.cache == (100, 0) and first.report_usage
    assert second.tool_calls == [("file", "{broken")] and not second.report_usage


async def test_the_routed_server_answers_each_workspace_from_its_own_script_and_repeats_for_a_retry():
    def body(workspace: str, answers: int = 0, extra: str = "") -> dict:
        system = f"<environment>\n- Workspace: {workspace}\n- Date: 2026-01-01\n</environment>"
        messages = [{"role": "system", "content": system}, {"role": "user", "content": "go" + extra}]
        messages += [{"role": "assistant", "content": f"a{i}"} for i in range(answers)]
        return {"model": "m", "messages": messages}

    assert request_workspace(body("/w/a")) == "/w/a"
    assert request_workspace({"system": [{"type": "text", "text": "- Workspace: /w/b"}], "messages": []}) == "/w/b"
    with RoutedModelServer(strict=False) as server:
        server.route("/w/a", [tool("shell", command="a1"), tool("shell", command="a2")])
        server.route("/w/b", [tool("shell", command="b1")])
        async with httpx.AsyncClient(base_url=server.url) as http:
            async def ask(payload: dict) -> str:
                answer = (await http.post("/chat/completions", json=payload)).json()
                return answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]

            assert "a1" in await ask(body("/w/a"))
            assert "b1" in await ask(body("/w/b"))
            assert "a1" in await ask(body("/w/a"))  # the same request again (a retry): the same answer
            assert "a2" in await ask(body("/w/a", 1))
            reply = await http.post("/chat/completions", json=body("/w/b", 1))
            assert reply.status_code == 400
        assert server.problems("/w/b") and not server.problems("/w/a")
    with RoutedModelServer(strict=False) as fresh:  # a harness restarted mid-task: resume after the answers
        fresh.route("/w/a", [tool("shell", command="a1"), tool("shell", command="a2")])
        async with httpx.AsyncClient(base_url=fresh.url) as http:
            answer = (await http.post("/chat/completions", json=body("/w/a", 1, "!"))).json()
            assert "a2" in answer["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]


def test_the_docs_example_case_is_a_valid_suite(tmp_path):
    page = (ROOT / "docs" / "evals.md").read_text()
    example = page.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "example.toml").write_text(example)
    (case,) = load_suite(tmp_path / "example.toml").cases
    assert case.name == "fix-failing-test" and case.script and case.interjections and case.replies

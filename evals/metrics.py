"""pass@k and pass^k, and the report they go into.

With n trials of a case of which c passed:

- pass@k = 1 - C(n-c, k) / C(n, k): the chance that at least one of k trials drawn from
  the n passes (the unbiased estimator of the Codex paper, Chen et al. 2021);
- pass^k = C(c, k) / C(n, k): the chance that all k drawn pass (tau-bench's measure of
  consistency).

pass@1 = pass^1 = c / n. A suite's figures are the means over its cases.
"""

from __future__ import annotations

from math import comb
from statistics import fmean

from pydantic import BaseModel, Field

from evals.graders import Verdict


def pass_at_k(n: int, c: int, k: int) -> float:
    _check(n, c, k)
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    _check(n, c, k)
    return comb(c, k) / comb(n, k)


def _check(n: int, c: int, k: int) -> None:
    if not (0 <= c <= n and 1 <= k <= n):
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n}, c={c}, k={k}")


class TrialResult(BaseModel):
    case: str
    trial: int
    workflow_id: str
    ui: str = ""
    workspace: str = ""
    state: str
    passed: bool
    reason: str = ""  # why it failed: the first failed grader, or how the task ended
    turns: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    wall_s: float = 0.0
    graders: list[Verdict] = Field(default_factory=list)


class Figures(BaseModel):
    n: int = 0
    passed: int = 0
    pass_at_1: float = 0.0
    pass_at_k: float = 0.0
    pass_hat_k: float = 0.0
    mean_turns: float = 0.0
    mean_tokens: float = 0.0
    mean_cost_usd: float = 0.0
    mean_wall_s: float = 0.0


class CaseReport(Figures):
    name: str
    trials: list[TrialResult] = Field(default_factory=list)


class Skipped(BaseModel):
    case: str
    why: str


class Report(BaseModel):
    suite: str
    run_id: str
    mode: str  # model, script or replay
    model: str
    provider: str
    trials: int
    k: int
    wall_s: float = 0.0
    overall: Figures = Field(default_factory=Figures)
    cases: list[CaseReport] = Field(default_factory=list)
    skipped: list[Skipped] = Field(default_factory=list)

    def failures(self) -> list[TrialResult]:
        return [t for case in self.cases for t in case.trials if not t.passed]


def case_report(name: str, trials: list[TrialResult], k: int) -> CaseReport:
    trials = sorted(trials, key=lambda t: t.trial)
    n, c = len(trials), sum(t.passed for t in trials)
    k = min(k, n) if n else k
    return CaseReport(
        name=name, trials=trials, n=n, passed=c,
        pass_at_1=pass_at_k(n, c, 1) if n else 0.0,
        pass_at_k=pass_at_k(n, c, k) if n else 0.0,
        pass_hat_k=pass_hat_k(n, c, k) if n else 0.0,
        **_means(trials),
    )


def overall(cases: list[CaseReport]) -> Figures:
    ran = [c for c in cases if c.n]
    trials = [t for c in ran for t in c.trials]
    if not ran:
        return Figures()
    return Figures(
        n=len(trials), passed=sum(t.passed for t in trials),
        pass_at_1=fmean(c.pass_at_1 for c in ran),
        pass_at_k=fmean(c.pass_at_k for c in ran),
        pass_hat_k=fmean(c.pass_hat_k for c in ran),
        **_means(trials),
    )


def _means(trials: list[TrialResult]) -> dict[str, float]:
    if not trials:
        return {}
    return {
        "mean_turns": fmean(t.turns for t in trials),
        "mean_tokens": fmean(t.tokens for t in trials),
        "mean_cost_usd": fmean(t.cost_usd for t in trials),
        "mean_wall_s": fmean(t.wall_s for t in trials),
    }

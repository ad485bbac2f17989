"""``eval SUITE``: run a suite of eval cases, K trials each, and report pass@k and pass^k.

The harness is ``evals/``; this module parses, shows progress and the report, and says what
the exit status is: 1 when the overall pass@1 is below ``--min-pass``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from cli.options import positive_int
from cli.render import make_console, safe
from cli.tasks import UserError, configured_model, provider_mode, streaming, ui_link
from evals.metrics import Figures, Report, TrialResult
from evals.run import SCRIPTED_MODEL, EvalError, EvalOptions, new_run_id, run_suite
from evals.suite import JudgeConfig, SuiteError, load_suite
from providers.factory import MODES
from temporal.client import connect, is_embedded


def register(subparsers: argparse._SubParsersAction) -> None:
    s = subparsers.add_parser("eval", help="run a suite of eval cases, K trials each: pass@k, pass^k and a report")
    s.add_argument("suite", help="the suite file (TOML or JSON; see docs/evals.md)")
    s.add_argument("--trials", type=positive_int, default=1, metavar="K", help="trials per case (default: 1)")
    s.add_argument("--k", type=positive_int, help="pass@k and pass^k at this k (default: --trials)")
    s.add_argument("--concurrency", type=positive_int, default=4, metavar="N", help="trials at once (default: 4)")
    s.add_argument("--model", help="the model under test (default: $AGENT_MODEL)")
    s.add_argument("--provider", choices=list(MODES), help="its tool-calling mode (default: $AGENT_PROVIDER or openai)")
    offline = s.add_mutually_exclusive_group()
    offline.add_argument("--demo", action="store_true", help="the offline scripted model: the cases with a script")
    offline.add_argument("--replay", action="store_true", help="replay recorded cases' model answers, offline")
    s.add_argument("--case", action="append", default=[], metavar="NAME", help="only this case (a name or glob; repeat it)")
    s.add_argument("--json", metavar="FILE", help="also write the report as JSON to FILE ('-': stdout, and the table to stderr)")
    s.add_argument("--min-pass", type=float, metavar="X", help="exit 1 when the overall pass@1 is below X (0..1)")
    s.add_argument("--run-id", help="take up the trials of an earlier run with this id (default: a new run)")
    s.add_argument("--judge-model", help="the model that grades rubrics (default: the suite's, else the model under test)")
    s.add_argument("--judge-provider", choices=list(MODES), default="openai", help="the judge's mode (default: openai)")
    s.add_argument("--no-stream", action="store_true", help="ask the model for whole answers")
    s.set_defaults(run=run)


async def run(args: argparse.Namespace) -> int:
    try:
        suite = load_suite(args.suite)
    except SuiteError as err:
        raise UserError(str(err)) from None
    mode = "script" if args.demo else "replay" if args.replay else "model"
    model = SCRIPTED_MODEL if args.demo else "recorded" if args.replay else configured_model(args)
    client = await connect(args.settings)
    options = EvalOptions(
        settings=args.settings,
        trials=args.trials, k=args.k, concurrency=args.concurrency, mode=mode, model=model,
        provider=provider_mode(args) if mode == "model" else "openai", stream=mode == "model" and streaming(args),
        local_worker=mode != "model" or is_embedded(args.settings.temporal), run_id=args.run_id or new_run_id(suite.title), only=args.case,
        judge=JudgeConfig(model=args.judge_model, provider=args.judge_provider) if args.judge_model else None,
        ui_link=lambda workflow_id: ui_link(client, workflow_id, args.settings.temporal),
    )
    to_stdout = args.json == "-"
    console = Console(stderr=True, highlight=False, soft_wrap=True,
                      force_terminal=None if sys.stderr.isatty() else False) if to_stdout else make_console()
    view = ProgressView(console, suite.title)
    console.print(f"[dim]eval run {options.run_id}: if it stops, take it up again with --run-id {options.run_id}[/]")
    try:
        with view.bar:
            report = await run_suite(client, suite, options, view)
    except EvalError as err:
        raise UserError(str(err)) from None
    render(console, report)  # on stderr when the JSON goes to stdout
    if to_stdout:
        print(report.model_dump_json(indent=2))
    elif args.json:
        Path(args.json).write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if args.min_pass is not None and report.overall.pass_at_1 < args.min_pass:
        console.print(f"[red]pass@1 {report.overall.pass_at_1:.2f} is below --min-pass {args.min_pass:g}[/]")
        return 1
    return 0


class ProgressView:
    """A progress bar while trials run (on a terminal), and a line per finished trial."""

    def __init__(self, console: Console, title: str) -> None:
        self.console = console
        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                            TimeElapsedColumn(), console=console, transient=True)
        self.title = title
        self.task = self.bar.add_task(f"eval {safe(title)}", total=None)
        self.passed = self.failed = 0

    def started(self, total: int) -> None:
        self.bar.update(self.task, total=total)

    def finished(self, result: TrialResult) -> None:
        if result.passed:
            self.passed += 1
        else:
            self.failed += 1
        mark = "[green]✓[/]" if result.passed else "[red]✗[/]"
        why = f" · {safe(result.reason)}" if result.reason and not result.passed else ""
        self.console.print(f"{mark} {safe(result.case)} #{result.trial} {result.state} · {result.turns} turns · "
                           f"{result.wall_s:.1f} s{why}")
        self.bar.update(self.task, advance=1,
                        description=f"eval {safe(self.title)} · [green]{self.passed} passed[/] · "
                                    f"[red]{self.failed} failed[/]")


def render(console: Console, report: Report) -> None:
    k = report.k
    table = Table(title=f"{safe(report.suite)} · {report.mode} · {safe(report.model)} · {report.trials} trials per case",
                  box=None, collapse_padding=True, pad_edge=False)
    table.add_column("case", no_wrap=True, min_width=min(24, max([len(c.name) for c in report.cases] + [7])))
    for header in ("passed", "pass@1", f"pass@{k}", f"pass^{k}", "turns", "tokens", "cost", "wall"):
        table.add_column(header, justify="right", no_wrap=True)

    def row(name: str, figures: Figures, style: str = "") -> None:
        table.add_row(name, f"{figures.passed}/{figures.n}", f"{figures.pass_at_1:.2f}", f"{figures.pass_at_k:.2f}",
                      f"{figures.pass_hat_k:.2f}", f"{figures.mean_turns:.1f}", f"{figures.mean_tokens:,.0f}",
                      f"${figures.mean_cost_usd:.4f}", f"{figures.mean_wall_s:.1f} s", style=style)

    for case in report.cases:
        row(safe(case.name), case, "" if case.passed == case.n else "red")
    table.add_section()
    row("overall", report.overall, "bold")
    # Into a log or a pipe there is no width to fit: never cut a column.
    wide = console if console.is_terminal else Console(file=console.file, highlight=False, width=200)
    wide.print(table)
    console.print("[dim]turns, tokens, cost and wall time are means per trial[/]")
    for trial in report.failures():
        console.print(f"[red]✗[/] {safe(trial.case)} #{trial.trial}: {safe(trial.reason)}\n    {trial.ui or trial.workflow_id}")
    for skipped in report.skipped:
        console.print(f"[dim]skipped {safe(skipped.case)}: {safe(skipped.why)}[/]")
    console.print(f"[dim]run {report.run_id} · {report.wall_s:.1f} s[/]")

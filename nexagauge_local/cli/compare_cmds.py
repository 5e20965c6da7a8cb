"""`compare` and `gate`: regression tracking across runs and a CI deployment gate.

Option parsing and printing only; the work is in app/run_comparison.py and app/policy_check.py.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.panel import Panel
from rich.progress import Progress, TaskID
from rich.text import Text

from nexagauge_local.app.policy_check import gate
from nexagauge_local.app.run_comparison import DEFAULT_RESAMPLES, CompareHooks, compare
from nexagauge_local.cli.errors import cli_errors
from nexagauge_local.cli.exit_codes import GATE_FAILED, OK
from nexagauge_local.cli.progress import RichEvents, progress_bars
from nexagauge_local.cli.tables import Cell, Column, fitted_table, left_out_line

if TYPE_CHECKING:
    from nexagauge_local.compare.diff import Comparison, MetricRow
    from nexagauge_local.gate import GateReport

MAX_FLIPS_SHOWN = 5

_dir = click.Path(exists=False, file_okay=False, path_type=Path)


def _hooks(progress: Progress) -> CompareHooks:
    """The compare service's hooks drawn as two bars: case reports read, metrics bootstrapped."""
    tasks: dict[str, TaskID] = {}

    def start(total: int) -> None:
        progress.start()  # only now: a run that cannot be opened draws nothing
        tasks["reading"] = progress.add_task("case reports", total=total)
        tasks["bootstrap"] = progress.add_task("bootstrap", total=None)

    return CompareHooks(
        start=start,
        read=lambda n: progress.advance(tasks["reading"], n),
        metric=lambda done, n: progress.update(tasks["bootstrap"], completed=done, total=n),
    )


def _f(x: float | None, signed: bool = False) -> str:
    if x is None:
        return "-"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def _delta_cell(row: MetricRow) -> Text:
    if row.delta is None:
        return Text("-")
    style = ""
    if row.ci_high is not None and row.ci_high < 0:
        style = "red"
    elif row.ci_low is not None and row.ci_low > 0:
        style = "green"
    return Text(f"{row.delta:+.3f} [{_f(row.ci_low, True)}, {_f(row.ci_high, True)}]", style=style)


# node and metric are what a gate policy's rules name: never cut; the means and pass rates
# are left out first on a narrow terminal, the change and the flips last
COMPARE_COLUMNS = (
    Column("node", key=True), Column("metric", key=True),
    Column("n", key=True, justify="right"),
    Column("mean A", key=True, justify="right", drop=4),
    Column("mean B", key=True, justify="right", drop=4),
    Column("delta B-A [95% CI]", justify="right", min_width=14),
    Column("pass A", key=True, justify="right", drop=3),
    Column("pass B", key=True, justify="right", drop=3),
    Column("change", key=True, justify="right", drop=2),
    Column("pass->fail", key=True, justify="right", drop=1),
    Column("fail->pass", key=True, justify="right", drop=1),
)


def print_comparison(cmp: Comparison, console: Console) -> None:
    rows: list[list[Cell]] = []
    for row in cmp.metrics:
        down, up = len(row.flipped_to_fail), len(row.flipped_to_pass)
        rows.append([
            escape(row.node),
            escape(row.metric),
            str(row.n_matched),
            _f(row.mean_a),
            _f(row.mean_b),
            _delta_cell(row),
            _f(row.pass_rate_a),
            _f(row.pass_rate_b),
            _f(row.pass_rate_change, True),
            Text(str(down), style="bold red" if down else ""),
            Text(str(up), style="green" if up else ""),
        ])
    title = f"compare  A={cmp.run_a}  B={cmp.run_b}  ({cmp.n_matched_cases} shared case(s))"
    table, left_out = fitted_table(escape(title), COMPARE_COLUMNS, rows, console.width)
    console.print(table)
    if left_out:
        console.print(left_out_line(left_out, COMPARE_COLUMNS, rows))
    for row in cmp.metrics:
        for label, flips, style in (
            ("passed -> failed", row.flipped_to_fail, "red"),
            ("failed -> passed", row.flipped_to_pass, "green"),
        ):
            if flips:
                flipped = ", ".join(f.case_id for f in flips[:MAX_FLIPS_SHOWN])
                more = (
                    f" (+{len(flips) - MAX_FLIPS_SHOWN} more)"
                    if len(flips) > MAX_FLIPS_SHOWN
                    else ""
                )
                console.print(
                    Text.assemble((f"{row.node}.{row.metric} {label}: ", style), flipped + more),
                    soft_wrap=True,
                )
    for side, ids in (("A", cmp.only_in_a), ("B", cmp.only_in_b)):
        if ids:
            shown = ", ".join(ids[:MAX_FLIPS_SHOWN])
            more = f" (+{len(ids) - MAX_FLIPS_SHOWN} more)" if len(ids) > MAX_FLIPS_SHOWN else ""
            console.print(
                Text.assemble(
                    (f"only in {side}: ", "yellow"), f"{len(ids)} case(s): {shown}{more}"
                ),
                soft_wrap=True,
            )
    _print_judge(cmp, console)


def _print_judge(cmp: Comparison, console: Console) -> None:
    judge = cmp.judge
    fa = (judge.a or {}).get("fingerprint") or "none"
    fb = (judge.b or {}).get("fingerprint") or "none"
    console.print(f"judge A: {fa}\njudge B: {fb}", soft_wrap=True)
    if judge.warnings:
        console.print(
            Panel(
                Text(
                    "\n".join(judge.warnings) + "\nThe deltas above mix the effect of the judge "
                    "or prompt change with the effect of the change under test.",
                    style="bold red",
                ),
                title="WARNING: the two runs were not judged alike",
                border_style="red",
            )
        )
    if judge.same_prompt_versions is None:
        console.print(
            Text(
                "note: a run did not record its prompt versions in summary.json; "
                "they could not be compared",
                style="yellow",
            ),
            soft_wrap=True,
        )


COMPARE_EPILOG = """\b
Examples:
  nexagauge-local compare runs/v1 runs/v2
  nexagauge-local compare runs/v1 runs/v2 --output-dir cmp --seed 7 --resamples 5000

\b
Writes DIR/compare.json (DIR defaults to RUN_B): one row per node and metric with mean_a,
mean_b, delta, ci_low, ci_high, pass rates and the flipped cases with their evidence; plus
only_in_a, only_in_b and the judge check. Exit 2 when a directory is not a finished run.
"""


@click.command("compare", epilog=COMPARE_EPILOG)
@click.argument("run_a", type=_dir)
@click.argument("run_b", type=_dir)
@click.option("--output-dir", type=_dir, help="Where compare.json goes (default: RUN_B).")
@click.option(
    "--seed",
    type=int,
    default=0,
    show_default=True,
    help="Bootstrap seed: the same seed gives the same intervals.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=100),
    default=DEFAULT_RESAMPLES,
    show_default=True,
    help="Bootstrap resamples per metric.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def compare_cmd(
    run_a: Path, run_b: Path, output_dir: Path | None, seed: int, resamples: int, quiet: bool
) -> None:
    """Compare two finished runs (A = before, B = after) case by case.

    Cases are matched by case_id. Per node and metric: mean score of A and B over the cases
    scored in both, the delta B-A with a seeded paired-bootstrap 95% confidence interval, pass
    rates and their change, and every case that flipped (passed -> failed, failed -> passed)
    with both verdicts and the judge's evidence. A metric with an error counts as not passed.
    Runs judged by different judges or prompt versions are compared, with a loud warning.
    """
    with cli_errors(), progress_bars(quiet) as progress:
        done = compare(run_a, run_b, output_dir=output_dir, seed=seed, resamples=resamples,
                       hooks=_hooks(progress), notices=RichEvents(progress.console))
    print_comparison(done.comparison, Console())
    if done.signature_removed:
        click.echo("manifest.json.sig removed (it covered the manifest before compare.json): "
                   f"renew it with `nexagauge-local sign {done.path.parent} --key KEYFILE`",
                   err=True)
    click.echo(str(done.path))


GATE_EPILOG = """\b
Policy file (TOML):
  rules = [
    "grounding.mean >= 0.8",
    "redteam.toxicity.pass_rate >= 0.98",
    "redteam.aggregate.high_stakes_failure_rate <= 0.0",
  ]
  optional = ["geval.answers_question.mean >= 0.7"]  # SKIP when absent
  [compare]                 # needs --baseline
  max_regression = 0.02     # largest drop of any mean or pass rate vs the baseline

\b
A rule is PATH OP NUMBER, OP one of >= <= > < ==. PATH:
  NODE.STAT          mean, median, pass_rate, errors, scored, eligible
  NODE.METRIC.STAT   mean, median, min, max, pass_rate, errors, n
  NODE.aggregate.KEY red-team run-level metrics (metrics/redteam.json)
  NODE.KEY...        any number in metrics/NODE.json; eval.* comes from the case reports
A rule naming a metric the run lacks is an error (exit 2) unless listed under `optional`;
a metric whose value is null FAILS.

\b
Exit codes: 0 every rule passed, 1 a rule failed, 2 bad policy or run directory
(the message gives FILE:LINE of the bad rule; no report files are written).

\b
Examples:
  nexagauge-local gate runs/v2 --policy gate.toml
  nexagauge-local gate runs/v2 --policy gate.toml --baseline runs/v1 --junit gate.xml
"""


@click.command("gate", epilog=GATE_EPILOG)
@click.argument("run", type=_dir)
@click.option(
    "--policy",
    "policy_path",
    required=True,
    type=click.Path(dir_okay=False, path_type=Path),
    help="Policy file (TOML).",
)
@click.option("--baseline", type=_dir, help="Earlier run for compare.max_regression.")
@click.option(
    "--junit",
    "junit_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the result as JUnit XML (one testcase per rule).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Write the result as JSON.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Bootstrap seed (baseline).")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def gate_cmd(
    run: Path,
    policy_path: Path,
    baseline: Path | None,
    junit_path: Path | None,
    json_path: Path | None,
    seed: int,
    quiet: bool,
) -> None:
    """Check a finished RUN against a policy of thresholds; exit 1 when any rule fails.

    Prints each rule with its value and PASS/FAIL/SKIP, and writes the same as JSON and JUnit
    XML so a CI system shows every rule as a test.
    """
    with cli_errors(), progress_bars(quiet) as progress:
        outcome = gate(run, policy_path, baseline=baseline, seed=seed, json_path=json_path,
                       junit_path=junit_path, hooks=_hooks(progress))
    if outcome.baseline_unread:
        Console(stderr=True).print(
            "[yellow]note:[/] --baseline given but the policy has no compare rule; it was not read"
        )
    print_gate(outcome.report, Console())
    sys.exit(OK if outcome.passed else GATE_FAILED)


# a rule is the policy's own text, which the user looks up and edits: never cut
GATE_COLUMNS = (Column("rule", key=True), Column("value", key=True),
                Column("result", key=True), Column("detail", min_width=16))


def print_gate(report: GateReport, console: Console) -> None:
    styles = {"PASS": "bold green", "FAIL": "bold red", "SKIP": "yellow"}
    rows: list[list[Cell]] = [
        [Text(res.rule), "-" if res.value is None else f"{res.value:.4g}",
         Text(res.status, style=styles[res.status]), Text(res.detail)]
        for res in report.results]
    table, _ = fitted_table(escape(f"gate {report.run}  policy {report.policy}"), GATE_COLUMNS,
                            rows, console.width)
    console.print(table)
    c = report.counts
    verdict = Text(
        "PASSED" if report.passed else "FAILED", style="bold green" if report.passed else "bold red"
    )
    console.print(
        Text.assemble(
            "gate ", verdict, f": {c['PASS']} passed, {c['FAIL']} failed, {c['SKIP']} skipped"
        )
    )

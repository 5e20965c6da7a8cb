"""`compare` and `gate`: regression tracking across runs and a CI deployment gate."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import click
from rich.console import Console
from rich.panel import Panel
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from nexagauge_local.compare import BadRunDir, RunDir, compare_runs
from nexagauge_local.compare.bootstrap import DEFAULT_RESAMPLES
from nexagauge_local.compare.diff import Comparison, MetricRow
from nexagauge_local.gate import GateReport, PolicyError, evaluate_policy, load_policy
from nexagauge_local.gate.junit import write_junit
from nexagauge_local.report.files import write_json

BAD_INPUT = 2
GATE_FAILED = 1
MAX_FLIPS_SHOWN = 5

_dir = click.Path(exists=False, file_okay=False, path_type=Path)


def _bad(message: str) -> None:
    Console(stderr=True).print(Text.assemble(("error: ", "bold red"), message), soft_wrap=True)
    sys.exit(BAD_INPUT)


def _open(path: Path) -> RunDir:
    try:
        return RunDir(path)
    except BadRunDir as exc:
        _bad(str(exc))
        raise  # unreachable: _bad exits


@contextmanager
def _progress(quiet: bool) -> Iterator[Progress]:
    progress = Progress(
        TextColumn("[bold]{task.description:<14}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=Console(stderr=True),
        disable=quiet,
        transient=True,
    )
    with progress:
        yield progress


def run_compare(run_a: RunDir, run_b: RunDir, seed: int, resamples: int, quiet: bool) -> Comparison:
    with _progress(quiet) as progress:
        total = len(run_a.report_paths()) + len(run_b.report_paths())
        reading = progress.add_task("case reports", total=total)
        bootstrap = progress.add_task("bootstrap", total=None)

        def on_metric(done: int, n: int) -> None:
            progress.update(bootstrap, completed=done, total=n)

        try:
            return compare_runs(
                run_a,
                run_b,
                seed=seed,
                n_resamples=resamples,
                progress=lambda n: progress.advance(reading, n),
                on_metric=on_metric,
            )
        except BadRunDir as exc:
            _bad(str(exc))
            raise


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


def print_comparison(cmp: Comparison, console: Console) -> None:
    table = Table(
        title=f"compare  A={cmp.run_a}  B={cmp.run_b}  ({cmp.n_matched_cases} shared case(s))"
    )
    for col in (
        "node",
        "metric",
        "n",
        "mean A",
        "mean B",
        "delta B-A [95% CI]",
        "pass A",
        "pass B",
        "change",
        "pass->fail",
        "fail->pass",
    ):
        table.add_column(col, justify="left" if col in ("node", "metric") else "right")
    for row in cmp.metrics:
        down, up = len(row.flipped_to_fail), len(row.flipped_to_pass)
        table.add_row(
            row.node,
            row.metric,
            str(row.n_matched),
            _f(row.mean_a),
            _f(row.mean_b),
            _delta_cell(row),
            _f(row.pass_rate_a),
            _f(row.pass_rate_b),
            _f(row.pass_rate_change, True),
            Text(str(down), style="bold red" if down else ""),
            Text(str(up), style="green" if up else ""),
        )
    console.print(table)
    for row in cmp.metrics:
        for label, flips, style in (
            ("passed -> failed", row.flipped_to_fail, "red"),
            ("failed -> passed", row.flipped_to_pass, "green"),
        ):
            if flips:
                ids = ", ".join(f.case_id for f in flips[:MAX_FLIPS_SHOWN])
                more = (
                    f" (+{len(flips) - MAX_FLIPS_SHOWN} more)"
                    if len(flips) > MAX_FLIPS_SHOWN
                    else ""
                )
                console.print(
                    Text.assemble((f"{row.node}.{row.metric} {label}: ", style), ids + more),
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
    a, b = _open(run_a), _open(run_b)
    cmp = run_compare(a, b, seed, resamples, quiet)
    out = (output_dir or run_b) / "compare.json"
    write_json(out, cmp.model_dump(mode="json"))
    print_comparison(cmp, Console())
    if (out.parent / "summary.json").exists():  # a run directory: refresh its report's compare section
        from nexagauge_local.report.html import write_report_or_warn

        write_report_or_warn(out.parent, Console(stderr=True))
    click.echo(str(out))


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
    try:
        policy = load_policy(policy_path)
    except PolicyError as exc:
        _bad(str(exc))
        return
    target = _open(run)
    comparison = None
    if baseline is not None and policy.needs_baseline:
        # few resamples: only max_regression is read, and it does not depend on the CI
        comparison = run_compare(_open(baseline), target, seed, 100, quiet)
    try:
        report = evaluate_policy(policy, target, comparison)
    except PolicyError as exc:
        _bad(str(exc))
        return
    except BadRunDir as exc:
        _bad(str(exc))
        return
    if baseline is not None and not policy.needs_baseline:
        Console(stderr=True).print(
            "[yellow]note:[/] --baseline given but the policy has no compare rule; it was not read"
        )
    print_gate(report, Console())
    if json_path is not None:
        write_json(json_path, report.model_dump(mode="json"))
    if junit_path is not None:
        write_junit(report, junit_path)
    sys.exit(0 if report.passed else GATE_FAILED)


def print_gate(report: GateReport, console: Console) -> None:
    table = Table(title=f"gate {report.run}  policy {report.policy}")
    for col in ("rule", "value", "result", "detail"):
        table.add_column(col)
    styles = {"PASS": "bold green", "FAIL": "bold red", "SKIP": "yellow"}
    for res in report.results:
        value = "-" if res.value is None else f"{res.value:.4g}"
        table.add_row(res.rule, value, Text(res.status, style=styles[res.status]), res.detail)
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

"""`report`, `export` and `agreement`: commands that read a finished output directory.

Option parsing and printing only; the work is in app/report_rerender.py, app/row_export.py,
app/attack_artifacts.py and app/label_agreement.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console

from nexagauge_local.cli.errors import cli_errors
from nexagauge_local.cli.exit_codes import OK
from nexagauge_local.cli.progress import case_bar

if TYPE_CHECKING:
    from nexagauge_local.app.report_rerender import Rerendered

OUT_DIR = click.Path(file_okay=False, path_type=Path)
# export's formats of a run's attacks (app/attack_artifacts.py), beside its row formats
ATTACK_EXPORTS = ("jailbreakbench", "harmbench")


def _say_rerendered(done: Rerendered, out_dir: Path) -> None:
    """What re-rendering did to an audited folder's manifest and signature (stderr)."""
    if done.manifest_updated:
        click.echo("manifest.json updated for the new report.html", err=True)
    if done.signature_removed:
        click.echo("manifest.json.sig removed (it covered the old manifest): renew it with "
                   f"`nexagauge-local sign {out_dir} --key KEYFILE`", err=True)


@click.command("report")
@click.argument("out_dir", type=OUT_DIR, metavar="OUTDIR")
@click.option(
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the HTML (default OUTDIR/report.html).",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def report_cmd(out_dir: Path, output: Path | None, quiet: bool) -> None:
    """Re-render OUTDIR/report.html from the run's JSON files.

    The page is one self-contained file (inline CSS, inline SVG charts, no network): run
    header, cost, score distributions, per-metric tables, red-team panel, judge agreement and
    run comparison (when agreement.json / compare.json are present) and a per-case drill-down
    with the judge's evidence highlighted. `run` writes it already; use this after copying a
    run elsewhere, after `agreement` or `compare`, or after upgrading the tool.

    \b
    Examples:
      nexagauge-local report out/run1
      nexagauge-local report out/run1 --output /tmp/run1.html
    """
    from nexagauge_local.app.report_rerender import case_count, rerender_report

    with cli_errors(), case_bar("report", case_count(out_dir), quiet) as advance:
        done = rerender_report(out_dir, output, progress=advance)
    _say_rerendered(done, out_dir)
    click.echo(str(done.path))


@click.command("export")
@click.argument("out_dir", type=OUT_DIR, metavar="OUTDIR")
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["csv", "jsonl", "parquet", *ATTACK_EXPORTS]),
    default="csv",
    show_default=True,
    help="parquet needs pyarrow: pip install 'nexagauge-local[export]'. jailbreakbench and "
    "harmbench export a run's attacks (docs/attacks.md \"Exports\").",
)
@click.option(
    "--output",
    type=click.Path(path_type=Path),
    help="Output file (default OUTDIR/results.<format>); jailbreakbench: a folder (default "
    "OUTDIR/jailbreakbench/); harmbench: default OUTDIR/harmbench_completions.json.",
)
@click.option(
    "--input",
    "records",
    type=click.Path(dir_okay=False, path_type=Path),
    help="jailbreakbench, harmbench: the attack records the run read (default: the input "
    "summary.json names).",
)
def export_cmd(out_dir: Path, fmt: str, output: Path | None, records: Path | None) -> None:
    """Write one row per case x metric of the run in OUTDIR, for pandas and spreadsheets.

    Columns: case_id, node, metric, category, score, passed, verdict, severity (judge 1-5,
    scale mode), rating, error, reasoning, violations, evidence_spans, claims, claims_passed,
    and for redteam rows the heuristic's probe_category, probe_severity, heuristic_passed and
    risk_score. Empty cells are nulls; in CSV the list columns are JSON text.

    A run of attack records (`attack`, then `run redteam`) also exports as JailbreakBench
    artifacts, one <strategy>.json per strategy, or one HarmBench completions file, each
    attack with the judge's label; a run without attack records exits 2.

    \b
    Examples:
      nexagauge-local export out/run1 --format csv
      nexagauge-local export out/run1 --format parquet --output run1.parquet
      nexagauge-local export out/audit --format jailbreakbench --output jbb/
      nexagauge-local export out/audit --format harmbench --input attacks.jsonl
      python -c "import pandas as pd; print(pd.read_csv('out/run1/results.csv').groupby('metric').score.mean())"
    """
    if fmt in ATTACK_EXPORTS:
        from nexagauge_local.app.attack_artifacts import export_attacks

        with cli_errors():
            done = export_attacks(out_dir, fmt, output, records)
        click.echo(f"{done.entries} entr{'y' if done.entries == 1 else 'ies'} in {done.files} "
                   f"file(s) -> {done.path}", err=True)
        click.echo(str(done.path))
        return
    if records is not None:
        raise click.BadParameter(f"only for {' and '.join(ATTACK_EXPORTS)}", param_hint="--input")
    if output is not None and output.is_dir():
        raise click.BadParameter(f"{output}: a directory; {fmt} writes one file",
                                 param_hint="--output")
    from nexagauge_local.app.row_export import export

    with cli_errors():
        done_rows = export(out_dir, fmt, output)
    click.echo(f"{done_rows.rows} row(s) -> {done_rows.path}", err=True)
    click.echo(str(done_rows.path))


AGREEMENT_EPILOG = """\b
Label file (JSONL), one label per line:
  {"case_id": "c1", "metric": "redteam.bias", "expected_verdict": "UNSAFE"}
  {"case_id": "c2", "metric": "grounding.grounding", "expected_score": 0.2}
  {"case_id": "c3", "metric": "toxicity", "expected_passed": true}
or a dataset record that carries its labels (so one file is both the
dataset you `run` and the answer key):
  {"case_id": "c1", "output": "...", "labels": [{"metric": "redteam.bias",
   "expected_verdict": "UNSAFE"}]}
metric is node.metric, or a bare metric name when only one node has it.
Give exactly one of expected_verdict (SAFE/UNSAFE, PASS/FAIL, yes/no,
supported/not_supported, relevant/not_relevant), expected_passed (true/false)
or expected_score (0..1; passes at >= 0.6).

\b
Examples:
  nexagauge-local run eval --input "$(nexagauge-local agreement --bundled-path)" --output-dir out/agree
  nexagauge-local agreement --labels bundled --output-dir out/agree
  nexagauge-local agreement --labels my_labels.jsonl --output-dir out/run1
"""


def _show_bundled(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if value and not ctx.resilient_parsing:
        from nexagauge_local.app.label_agreement import BUNDLED, labels_path

        click.echo(str(labels_path(BUNDLED)))
        ctx.exit(OK)


@click.command("agreement", epilog=AGREEMENT_EPILOG)
@click.option(
    "--labels",
    "labels",
    required=True,
    metavar="PATH|bundled",
    help="Human labels (JSONL, format below); 'bundled' uses the labelled set shipped "
    "with the tool.",
)
@click.option(
    "--output-dir",
    "out_dir",
    type=OUT_DIR,
    required=True,
    help="A finished run's output directory; agreement.json is written there.",
)
@click.option(
    "--bundled-path",
    is_flag=True,
    expose_value=False,
    is_eager=True,
    callback=_show_bundled,
    help="Print the path of the bundled labelled set (a runnable dataset) and exit.",
)
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
def agreement_cmd(labels: str, out_dir: Path, quiet: bool) -> None:
    """Measure the judge against human labels: per metric accuracy, precision, recall, F1,
    Cohen's kappa and the confusion matrix (positive class = fail: UNSAFE, unsupported, FAIL).

    Writes OUTDIR/agreement.json and re-renders OUTDIR/report.html with an agreement section.
    Labels that match no scored metric (unknown case, judge error, metric without a verdict)
    are listed, not counted. For graded scores it also fits the best-F1 pass threshold on all
    labels and prints the F1 to expect from it, cross-validated (5-fold, with a 95% interval),
    beside the optimistic in-sample one; under 50 labels or 10 of the rarer class it warns.
    """
    from nexagauge_local.app.label_agreement import agreement
    from nexagauge_local.app.report_rerender import case_count

    with cli_errors(), case_bar("report", case_count(out_dir), quiet) as advance:
        done = agreement(out_dir, labels, progress=advance)
    _say_rerendered(done.report, out_dir)
    doc = done.doc
    console = Console(stderr=True)
    overall = doc["overall"]
    console.print(
        f"agreement over {overall['n']} label(s): accuracy {_fmt(overall['accuracy'])}"
        f", kappa {_fmt(overall['kappa'])}"
    )
    for key, stats in doc["metrics"].items():
        console.print(
            f"  {key:<28} n {stats['n']:>4}  acc {_fmt(stats['accuracy'])}  "
            f"F1 {_fmt(stats['f1'])}  kappa {_fmt(stats['kappa'])}"
        )
        if "ranking" in stats:
            click.echo(_ranking_line(stats["ranking"]), err=True)
    for line in doc.get("warnings", []):  # unwrapped, one line each: people grep for these
        click.echo(f"warning: {line}", err=True)
    if doc["unmatched_total"]:
        console.print(
            f"[yellow]{doc['unmatched_total']} label(s) not compared[/] "
            "(see agreement.json 'unmatched')"
        )
    click.echo(str(done.path))
    click.echo(str(done.report.path))


def _ranking_line(r: dict[str, Any]) -> str:
    """The fitted threshold with the F1 to quote beside it: the cross-validated one (the
    in-sample best F1 is shown too, named as such, because it is what a reader would compute
    and it is optimistic)."""
    if r.get("best_threshold") is None:
        return f"    {'':<28} graded scores: no threshold to fit (AUC {_fmt(r.get('roc_auc'))})"
    if r.get("cv_f1") is None:
        cv = "cross-validated F1 -  (too few of a class)"
    else:
        ci = r.get("cv_f1_ci95")
        band = f" [95% {ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
        cv = f"cross-validated F1 {r['cv_f1']:.3f}{band} ({r['cv_folds']}-fold)"
    return (f"    {'':<28} threshold {r['best_threshold']:.3f} (fitted on all {r['n']} labels): "
            f"{cv}; in-sample F1 {_fmt(r['best_f1'])}; AUC {_fmt(r['roc_auc'])}")


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"

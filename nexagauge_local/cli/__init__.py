"""The `nexagauge-local` command line: one group, one module per family of commands."""

from __future__ import annotations

import os
from typing import Any

import click

from nexagauge_local.cli import signals
from nexagauge_local.cli.lazy import LazyCommand, LazyGroup

# name -> where the command lives and its one-line help (tests/test_cli_lazy.py checks both).
LAZY: dict[str, LazyCommand] = {
    'run': LazyCommand(
        'nexagauge_local.cli.run_cmds:run_cmd',
        'Run TARGET and everything it needs over a dataset.',
    ),
    'estimate': LazyCommand(
        'nexagauge_local.cli.run_cmds:estimate_cmd',
        "Say what `run TARGET` would do and cost, without loading the judge's weights.",
    ),
    'prompts': LazyCommand(
        'nexagauge_local.cli.prompts_cmd:prompts_cmd',
        'Print the exact messages and JSON schema of every judge request one case would send.',
    ),
    'nodes': LazyCommand(
        'nexagauge_local.cli.run_cmds:nodes_cmd',
        'Print the node graph: what each node needs and does.',
    ),
    'models': LazyCommand(
        'nexagauge_local.cli.judge_cmds:models_cmd',
        'List judge model profiles and whether their weights are on this machine.',
    ),
    'calibrate': LazyCommand(
        'nexagauge_local.cli.judge_cmds:calibrate_cmd',
        "Measure this host's judge throughput and store it for `estimate`.",
    ),
    'cache': LazyCommand(
        'nexagauge_local.cli.judge_cmds:cache_group',
        'Inspect or clear the judge and embedding caches (SQLite, safe to delete).',
    ),
    'probes': LazyCommand(
        'nexagauge_local.cli.probe_cmds:probes_group',
        'The default red-team probe suite shipped with the tool.',
    ),
    'generate': LazyCommand(
        'nexagauge_local.cli.probe_cmds:generate_cmd',
        'Answer every probe with the model under test: local weights, batched, or its server.',
    ),
    'attack': LazyCommand(
        'nexagauge_local.cli.attack_cmds:attack_cmd',
        'Attack the model under test: every probe under every chosen strategy, batched.',
    ),
    'compare': LazyCommand(
        'nexagauge_local.cli.compare_cmds:compare_cmd',
        'Compare two finished runs (A = before, B = after) case by case.',
    ),
    'gate': LazyCommand(
        'nexagauge_local.cli.compare_cmds:gate_cmd',
        'Check a finished RUN against a policy of thresholds; exit 1 when any rule fails.',
    ),
    'report': LazyCommand(
        'nexagauge_local.cli.report_cmds:report_cmd',
        "Re-render OUTDIR/report.html from the run's JSON files.",
    ),
    'export': LazyCommand(
        'nexagauge_local.cli.report_cmds:export_cmd',
        'Write one row per case x metric of the run in OUTDIR, for pandas and spreadsheets.',
    ),
    'agreement': LazyCommand(
        'nexagauge_local.cli.report_cmds:agreement_cmd',
        'Measure the judge against human labels: per metric accuracy, precision, recall, F1, '
        "Cohen's kappa and the confusion matrix (positive class = fail: UNSAFE, unsupported, "
        'FAIL).',
    ),
    'keys': LazyCommand(
        'nexagauge_local.cli.audit_cmds:keys_group',
        'Ed25519 signing keys for run manifests.',
    ),
    'sign': LazyCommand(
        'nexagauge_local.cli.audit_cmds:sign_cmd',
        'Sign OUTDIR/manifest.json: writes OUTDIR/manifest.json.sig (replacing an old one).',
    ),
    'verify': LazyCommand(
        'nexagauge_local.cli.audit_cmds:verify_cmd',
        'Check OUTDIR against its manifest.json: every output file, and optionally the input, '
        'the judge weights and the signature.',
    ),
    'reproduce': LazyCommand(
        'nexagauge_local.cli.audit_cmds:reproduce_cmd',
        "Re-run OUTDIR's run from its manifest into a new folder, without the judge cache, "
        "and compare every case's scores and verdicts.",
    ),
    'bundle': LazyCommand(
        'nexagauge_local.cli.bundle_cmds:bundle_group',
        'Build and check an offline install (wheels, weights, checksums) for a GPU host.',
    ),
}

EPILOG = """\b
Examples:
  nexagauge-local run eval --input data.jsonl --output-dir out --gpu 0
  nexagauge-local run refmatch --input sample.json --output-dir out
  nexagauge-local estimate eval --input data.jsonl
  nexagauge-local nodes
"""


class _MainGroup(LazyGroup):
    """The CLI's group: a command that SIGTERM or SIGHUP stopped (cli/signals.py) and that
    says nothing of its own (a resumable one says where its work is, cli/errors.py) ends with
    one line naming the signal and exit 128 + its number, not click's "Aborted!" and 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            with signals.stops_surfaced():
                return super().invoke(ctx)
        except signals.Stopped as exc:
            click.echo(signals.interrupted_by(exc), err=True)
            ctx.exit(exc.exit_code)


@click.group(
    cls=_MainGroup,
    lazy=LAZY,
    epilog=EPILOG,
    context_settings={"help_option_names": ["-h", "--help"]},
)
@click.version_option(package_name="nexagauge-local")
def main() -> None:
    """Offline LLM evaluation on your own hardware.

    Scores model outputs (RAG answers, chat replies, red-team responses) with an open-weights
    judge running locally under constrained decoding, and with deterministic lexical and
    embedding metrics. Nothing leaves the machine: no API keys, no telemetry, no downloads.
    """
    arrow_uses_the_system_allocator()
    click.get_current_context().call_on_close(signals.install())


def arrow_uses_the_system_allocator() -> None:
    """Have pyarrow allocate with malloc in this CLI process, unless the user chose a pool.

    Why: pyarrow's default mimalloc pool keeps the pages of every batch it decoded: streaming a
    Parquet file of 10,000 rows grew the run's peak RSS by 45 MB more than with malloc (the
    pool itself never held more than 7 MB), and more on each pass over the file. pyarrow
    reads the variable once, when first imported (after option parsing, by the readers), so
    the CLI process is the right scope; a library caller's own pool choice is left alone.
    """
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "system")

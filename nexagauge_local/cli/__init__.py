"""The `nexagauge-local` command line: one group, one module per family of commands."""

from __future__ import annotations

import click

from nexagauge_local.cli.audit_cmds import keys_group, reproduce_cmd, sign_cmd, verify_cmd
from nexagauge_local.cli.compare_cmds import compare_cmd, gate_cmd
from nexagauge_local.cli.judge_cmds import cache_group, calibrate_cmd, models_cmd
from nexagauge_local.cli.probe_cmds import generate_cmd, probes_group
from nexagauge_local.cli.report_cmds import agreement_cmd, export_cmd, report_cmd
from nexagauge_local.cli.run_cmds import estimate_cmd, nodes_cmd, run_cmd

EPILOG = """\b
Examples:
  nexagauge-local run eval --input data.jsonl --output-dir out --gpu 0
  nexagauge-local run refmatch --input sample.json --output-dir out
  nexagauge-local estimate eval --input data.jsonl
  nexagauge-local nodes
"""


@click.group(epilog=EPILOG, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nexagauge-local")
def main() -> None:
    """Offline LLM evaluation on your own hardware.

    Scores model outputs (RAG answers, chat replies, red-team responses) with an open-weights
    judge running locally under constrained decoding, and with deterministic lexical and
    embedding metrics. Nothing leaves the machine: no API keys, no telemetry, no downloads.
    """


main.add_command(run_cmd)
main.add_command(estimate_cmd)
main.add_command(nodes_cmd)

main.add_command(models_cmd)
main.add_command(calibrate_cmd)
main.add_command(cache_group)
main.add_command(probes_group)
main.add_command(generate_cmd)
main.add_command(compare_cmd)
main.add_command(gate_cmd)
main.add_command(report_cmd)
main.add_command(export_cmd)
main.add_command(agreement_cmd)
main.add_command(keys_group)
main.add_command(sign_cmd)
main.add_command(verify_cmd)
main.add_command(reproduce_cmd)

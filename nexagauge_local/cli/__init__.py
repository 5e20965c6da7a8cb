"""The `nexagauge-local` command line: one group, one module per family of commands."""

from __future__ import annotations

import importlib

import click

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

# Command families that arrive with later parts of the tool register here when present.
for _module, _names in (
    ("nexagauge_local.cli.judge_cmds", ("models_cmd", "calibrate_cmd", "cache_group")),
):
    try:
        _mod = importlib.import_module(_module)
    except ModuleNotFoundError as _exc:
        if _exc.name != _module:
            raise
        continue
    for _name in _names:
        main.add_command(getattr(_mod, _name))

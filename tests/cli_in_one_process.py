"""Runs several CLI invocations one after another in one fresh interpreter, as a user's shell
would start them (in-process vLLM engines): the second engine in a process starts in seconds,
where each test-session engine is a spawned interpreter importing torch and vLLM again.

Usage: python -m tests.cli_in_one_process RUNS.json RESULTS.json: RUNS a list of argument
lists; RESULTS gets a list of {"exit_code", "output"}, one per run (a file, not stdout, which
the engine's own logging shares)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from nexagauge_local.cli import main


def run_all(runs: list[list[str]]) -> list[dict[str, object]]:
    results: list[dict[str, object]] = []
    for argv in runs:
        result = CliRunner().invoke(main, argv)
        results.append({"exit_code": result.exit_code, "output": result.output})
    return results


if __name__ == "__main__":
    results = run_all(json.loads(Path(sys.argv[1]).read_text()))
    Path(sys.argv[2]).write_text(json.dumps(results))

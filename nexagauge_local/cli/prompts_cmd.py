"""`prompts`: print what the judge would be sent for one case, without loading any weights."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import click
from rich.console import Console
from rich.markup import escape
from rich.rule import Rule

from nexagauge_local.cli.errors import cli_errors
from nexagauge_local.cli.options import (
    config_option,
    dataset_options,
    model_option,
    parse_models,
    target_argument,
    verbose_option,
)
from nexagauge_local.settings import RunSettings

if TYPE_CHECKING:
    from nexagauge_local.app.run_config import RunConfig


def _run_command() -> click.Command:
    """`run`, whose options a configuration's [run] table is checked against."""
    from nexagauge_local.cli.run_cmds import run_cmd

    return run_cmd


@click.command("prompts")
@click.argument("target", callback=lambda c, p, v: target_argument(v), metavar="TARGET")
@dataset_options
@click.option("--case", "case_id", metavar="ID", help="The case to show (default: the first valid case).")
@click.option("--node", metavar="NODE", help="Only this judge node's requests (e.g. claims, redteam).")
@click.option("--json", "as_json", is_flag=True, help="Print the requests as JSON.")
@model_option("A guard profile's requests are shown in its family's prompt; only its "
              "tokenizer is read, and only where the family renders through it.")
@verbose_option
@config_option(lambda: _run_command())
def prompts_cmd(target: str, input_path: str, limit: int | None, start: int, end: int | None,
                fields: tuple[str, ...], on_error: str, case_id: str | None, node: str | None,
                as_json: bool, models: tuple[str, ...], run_config: RunConfig | None) -> None:
    """Print the exact messages and JSON schema of every judge request one case would send.

    The real nodes build the requests (as `run` does) with no judge loaded, so this is what the
    judge sees, byte for byte: the system text, the fenced evaluated fields, the output schema
    and max_tokens. grounding, relevance and geval need earlier judge answers (claims, steps);
    their requests are built from the same stand-ins `estimate` uses and say so.

    \b
    Examples:
      nexagauge-local prompts eval --input data.jsonl --case rag-1
      nexagauge-local prompts redteam --input probes.jsonl --node redteam --json
      nexagauge-local prompts redteam --config run.toml --input data.jsonl   # its rubrics
      nexagauge-local prompts redteam --input probes.jsonl --model redteam=llama-guard-3-8b
    """
    from nexagauge_local.app.inputs import open_dataset
    from nexagauge_local.app.prompts import case_prompts

    model, node_models = parse_models(
        models, run_config.options.get("model", ()) if run_config else ())
    settings = RunSettings(target=target, limit=limit, start=start, end=end, on_error=on_error,
                           progress=False, model=model,
                           node_models={**(run_config.models if run_config else {}),
                                        **node_models},
                           config=run_config.source if run_config is not None else None)
    with cli_errors(resumable=True):
        shown = case_prompts(settings, lambda tmp: open_dataset(input_path, fields, limit, tmp,
                                                                start=start, end=end),
                             case_id, node)
    if as_json:
        click.echo(json.dumps(shown.as_dict(), indent=2, ensure_ascii=False))
        return
    console = Console(soft_wrap=True, highlight=False)
    total = len(shown.requests)
    console.print(f"[bold]{target}[/], case [bold]{escape(shown.case_id)}[/]: {total} judge request(s)")
    for i, req in enumerate(shown.requests, 1):
        console.print(Rule(f"request {i} of {total}: {req.node}"))
        console.print(f"judge format {req.judge_format}; prompt version {req.prompt_version}; "
                      f"schema {req.schema_name} (id {req.schema_id}); "
                      f"max_tokens {req.max_tokens}")
        if req.stand_in:
            console.print(f"[yellow]built from {req.stand_in}[/]: at run time the judge's own "
                          "answers take their place")
        if req.prompt is not None:
            console.print(f"[bold]--- {escape(req.judge_format)} prompt ---[/]")
            console.print(req.prompt, markup=False)
            continue
        for message in req.messages:
            console.print(f"[bold]--- {escape(message.get('role', '?'))} ---[/]")
            console.print(escape(message.get("content", "")), markup=False)
        console.print("[bold]--- JSON schema ---[/]")
        console.print(json.dumps(req.json_schema, indent=2), markup=False)
    if not total:
        console.print("no judge request: the case enters no judge node of this target "
                      "(see `estimate` for why cases are skipped)")

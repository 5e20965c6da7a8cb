"""`probes` (the shipped red-team suite) and `generate` (answer probes with the model under test).

Together with `run redteam` they close the audit loop: export or write probes, generate the
target model's responses locally, score them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.markup import escape

from nexagauge_local.cli.errors import OUTPUT_RESUME, cli_errors
from nexagauge_local.cli.options import (
    backend_option,
    parse_gpu_ids,
    target_server_options,
    verbose_option,
)
from nexagauge_local.cli.progress import RichEvents, lasting_bar
from nexagauge_local.cli.tables import Column, fitted_table, left_out_line
from nexagauge_local.redteam.service.suites import (
    expect_counts,
    import_probes,
    probes_jsonl,
    select_probes,
    severity_counts,
    write_probes,
)
from nexagauge_local.settings import default_cache_dir

SEVERITIES = ("critical", "high", "medium", "low")


@click.group("probes")
def probes_group() -> None:
    """The default red-team probe suite shipped with the tool.

    `probes import` turns your own prompt suite (a text file, DoNotAnswer, HarmBench, XSTest...)
    into the same format.

    \b
    Examples:
      nexagauge-local probes list --category self_harm
      nexagauge-local probes export --output probes.jsonl
      nexagauge-local probes import harmbench_behaviors_text_all.csv --output probes.jsonl
    """


F = TypeVar("F", bound=Callable[..., Any])

_filters = [
    click.option("--category", multiple=True, help="Keep only this category (repeatable)."),
    click.option("--severity", multiple=True,
                 type=click.Choice(["low", "medium", "high", "critical"]),
                 help="Keep only this severity (repeatable)."),
]


def _with_filters(fn: F) -> F:
    for opt in reversed(_filters):
        fn = opt(fn)
    return fn


@probes_group.command("list")
@_with_filters
@click.option("--summary", is_flag=True, help="Counts per category and severity instead of rows.")
def probes_list(category: tuple[str, ...], severity: tuple[str, ...], summary: bool) -> None:
    """Show the probes: id, category, severity, failure modes and task.

    \b
    Examples:
      nexagauge-local probes list --summary
      nexagauge-local probes list --category self_harm --severity critical
    """
    probes = select_probes(category, severity)
    console = Console()
    if summary:
        rows = [[cat, str(sum(sev.values())), *(str(sev[s]) for s in SEVERITIES)]
                for cat, sev in severity_counts(probes).items()]
        columns = [Column("category", key=True), Column("probes", key=True),
                   *(Column(s, key=True) for s in SEVERITIES)]
    else:
        rows = [[p["id"], p["category"], p["severity"], ", ".join(p["failure_modes"]), p["task"]]
                for p in probes]
        # id and category are what --category and a record's probe block take: never cut
        columns = [Column("id", key=True), Column("category", key=True),
                   Column("severity", key=True), Column("failure modes", drop=1, min_width=16),
                   Column("task", min_width=12)]
    table, left_out = fitted_table(f"{len(probes)} probe(s)", columns,
                                   [[escape(c) for c in r] for r in rows], console.width)
    console.print(table)
    if left_out:
        console.print(left_out_line(left_out, columns, rows))


@probes_group.command("export")
@_with_filters
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="JSONL file to write ('-' for stdout).")
def probes_export(category: tuple[str, ...], severity: tuple[str, ...], output: Path) -> None:
    """Write the probes as JSONL, one probe per line, ready for `generate --input`.

    \b
    Example:
      nexagauge-local probes export --output probes.jsonl --category prompt_injection
    """
    probes = select_probes(category, severity)
    if str(output) == "-":
        click.echo(probes_jsonl(probes), nl=False)
        return
    with cli_errors():
        n = write_probes(probes, output)
    click.echo(f"{n} probe(s) -> {output}", err=True)


_FIELD_HELP = ("Name the column of a logical field (input, id, category, severity, expect, context, "
               "task, failure_modes, expected_safe_behavior), e.g. --field input=Behavior. "
               "Repeatable. Common names are found without it (docs/audit.md).")


@probes_group.command("import")
@click.argument("input_path", metavar="INPUT",
                type=click.Path(exists=True, path_type=Path))
@click.option("--output", "-o", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="Probe JSONL to write, the format `probes export` writes ('-' for stdout).")
@click.option("--field", "fields", multiple=True, metavar="LOGICAL=COLUMN", help=_FIELD_HELP)
@click.option("--category-default", default="uncategorized", show_default=True,
              help="Category of a probe whose row has none.")
@click.option("--severity-default", type=click.Choice(["low", "medium", "high", "critical"]),
              default="medium", show_default=True, help="Severity of a probe whose row has none.")
@click.option("--expect-default", type=click.Choice(["refuse", "comply"]), default="refuse",
              show_default=True,
              help="What a safe answer does when the row does not say: refuse (a harmful "
                   "request) or comply (a benign one).")
def probes_import(input_path: Path, output: Path, fields: tuple[str, ...], category_default: str,
                  severity_default: str, expect_default: str) -> None:
    """Turn a prompt suite as you have it into probe JSONL, to read or edit before `generate`.

    INPUT is a text file (one prompt a line, `#` comments), or JSON/JSONL/CSV/TSV/Parquet/Arrow
    (compressed too) whose prompt column is prompt, input, goal, behavior, question or
    instruction (any case); category, id, severity and expect columns are found by their
    common names too (docs/audit.md, "Prompt suites as you have them"). Without an id column a
    probe's id is a hash of its prompt, the same in every run. Bad rows are listed as
    FILE:LINE: field: message (exit 2) and nothing is written.

    \b
    Examples:
      nexagauge-local probes import prompts.txt -o probes.jsonl --category-default my_policy
      nexagauge-local probes import donotanswer.jsonl -o probes.jsonl
      nexagauge-local probes import harmbench_behaviors_text_all.csv -o probes.jsonl
      nexagauge-local probes import xstest_prompts.csv -o probes.jsonl  # label safe -> comply
      nexagauge-local probes import mine.csv -o probes.jsonl --field input=text --field id=row
    """
    from nexagauge_local.redteam.suites.suite_row import SuiteDefaults

    defaults = SuiteDefaults.model_validate(
        {"category": category_default, "severity": severity_default, "expect": expect_default})
    with cli_errors():
        probes = import_probes(input_path, fields, defaults)
        if str(output) == "-":
            click.echo(probes_jsonl(probes), nl=False)
        else:
            write_probes(probes, output)
    click.echo(f"{len(probes)} probe(s) -> {output}", err=True)
    for category, counts in expect_counts(probes).items():
        comply = f" ({counts['comply']} to answer)" if counts["comply"] else ""
        click.echo(f"  {category}: {sum(counts.values())}{comply}", err=True)


@click.command("generate")
@click.option("--model",
              help="The model under test: a profile name (see `models`) or a path to weights; "
                   "with --target-url, the served model id (needed when it serves several).")
@click.option("--input", "input_path", type=click.Path(exists=True, path_type=Path),
              required=True,
              help="Probes: `probes export` JSONL, records with a `probe` block, a public "
                   "suite's JSONL/CSV/Parquet as it ships, or a text file of one prompt a line.")
@click.option("--field", "fields", multiple=True, metavar="LOGICAL=COLUMN", help=_FIELD_HELP)
@click.option("--output", type=click.Path(dir_okay=False, path_type=Path), required=True,
              help="JSONL records (case_id, input, output, probe) for `run redteam`.")
@click.option("--max-tokens", type=click.IntRange(min=1), default=256, show_default=True,
              help="Longest answer per probe; cut-off answers are counted and listed.")
@click.option("--system-prompt", help="A system message sent before every probe (e.g. your product's).")
@backend_option("auto: vllm when installed and a GPU is visible, else hf.")
@click.option("--gpu", metavar="IDS", help="GPU indices, e.g. 0 or 0,1.")
@click.option("--batch-size", type=click.IntRange(min=1), help="hf micro-batch (default 8 CPU, 64 GPU).")
@click.option("--limit", type=click.IntRange(min=1), help="Answer only the first N probes.")
@click.option("--fresh", is_flag=True, help="Overwrite --output instead of resuming it.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              default=default_cache_dir, show_default="~/.cache/nexagauge-local",
              help="Derived model files (dequantised GGUF).")
@click.option("--seed", type=int, default=0, show_default=True)
@target_server_options
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@verbose_option
def generate_cmd(model: str | None, input_path: Path, fields: tuple[str, ...], output: Path, max_tokens: int,
                 system_prompt: str | None, backend: str, gpu: str | None, batch_size: int | None, limit: int | None,
                 fresh: bool, cache_dir: Path, seed: int, target_url: str | None,
                 target_api_key: str | None, target_concurrency: int, quiet: bool) -> None:
    """Answer every probe with the model under test: local weights, batched, or its server.

    Writes one record per probe with the model's answer as `output` and the probe block kept,
    so `run redteam` scores it directly. An interrupted run resumes: probes already in --output
    are skipped (use --fresh to start over). Greedy decoding, so answers are reproducible.

    \b
    Example (the whole audit loop):
      nexagauge-local probes export --output probes.jsonl
      nexagauge-local generate --model ./my-model --input probes.jsonl --output responses.jsonl
      nexagauge-local run redteam --input responses.jsonl --output-dir audit

    \b
    A public suite or your own prompts, read as they are (docs/audit.md, "Prompt suites"):
      nexagauge-local generate --model M --input donotanswer.jsonl --output r.jsonl
      nexagauge-local generate --model M --input harmbench_behaviors_text_all.csv --output r.jsonl
      nexagauge-local generate --model M --input prompts.txt --output r.jsonl
      nexagauge-local generate --model M --input mine.csv --field input=text --output r.jsonl

    \b
    The deployed system, behind its OpenAI-compatible server (docs/attacks.md):
      nexagauge-local generate --target-url http://127.0.0.1:8000/v1 --input probes.jsonl \\
          --output r.jsonl
    """
    from nexagauge_local.redteam.service.generate import (
        answer_probes,
        load_probes,
        open_target,
        target_options,
    )
    from nexagauge_local.redteam.target.run import TargetAsk

    console = Console(stderr=True)
    with cli_errors(resumable=True, resume_hint=OUTPUT_RESUME):
        items = load_probes(input_path, limit, fields)
        target = target_options(target_url, target_api_key, target_concurrency)
        responder = open_target(model, target, backend=backend, gpu_ids=parse_gpu_ids(gpu),
                                cache_dir=cache_dir, seed=seed, batch_size=batch_size,
                                on_note=RichEvents(console).note)
        with lasting_bar("generate", len(items), quiet, console) as advance:
            how = TargetAsk.of(max_tokens, system_prompt, fresh=fresh, batch_size=batch_size)
            stats = answer_probes(items, responder, output, how, progress=advance)
    console.print(f"[green]done[/]: {stats.generated - stats.failed} answered, {stats.skipped_existing} already in "
                  f"{output}, {stats.truncated} cut at --max-tokens; {stats.prompt_tokens} prompt + "
                  f"{stats.output_tokens} output tokens in {stats.wall_seconds:.1f} s "
                  f"({stats.device_seconds:.1f} device-seconds)")
    if stats.failed_ids:
        console.print(f"[red]failed[/] (no answer, asked again on the next run): "
                      f"{', '.join(stats.failed_ids[:10])}"
                      + (" ..." if len(stats.failed_ids) > 10 else ""))
    if stats.truncated_ids:
        console.print(f"[yellow]cut off[/]: {', '.join(stats.truncated_ids[:10])}"
                      + (" ..." if len(stats.truncated_ids) > 10 else ""))
    click.echo(str(output))

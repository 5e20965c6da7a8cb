"""`models`, `calibrate` and `cache`: the judge's commands.

Option parsing and printing only; calibration's measurement is in app/throughput.py, the
cache's bookkeeping in app/cache.py.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from nexagauge_local.app.cache import (
    cache_stats,
    clear_cache,
    clear_embedding_cache,
    embedding_cache_stats,
    resolve_cache_dir,
)
from nexagauge_local.cli.errors import cli_errors
from nexagauge_local.cli.options import (
    backend_option,
    endpoint_options,
    endpoint_settings,
    parse_gpu_ids,
    verbose_option,
)
from nexagauge_local.cli.tables import Column, fitted_table, left_out_line
from nexagauge_local.judge import DEMO_NOTICE, expand_weights, list_profiles


def _console() -> Console:
    return Console(highlight=False)


def _cache_dir_option(fn: Any) -> Any:
    return click.option(
        "--cache-dir",
        type=click.Path(path_type=Path),
        default=None,
        help="Judge cache folder (default $NEXAGAUGE_CACHE_DIR or ~/.cache/nexagauge-local).",
    )(fn)


# ------------------------------------------------------------------ models


# A profile's name is what the user types (--model NAME) and `weights` where its files go:
# both are always shown whole; the engine settings are left out first on a narrow terminal.
PROFILE_COLUMNS = (
    Column("name", key=True),
    Column("present", key=True),
    Column("weights", min_width=16),
    Column("format", drop=4, min_width=16),
    Column("backend", drop=1, min_width=7),
    Column("dtype", drop=2, min_width=8),
    Column("parallel", drop=3, min_width=8),
    Column("notes", min_width=16),
)


@click.command("models", epilog="\b\nExample:\n  nexagauge-local models")
def models_cmd() -> None:
    """List judge model profiles and whether their weights are on this machine."""
    console = _console()
    print_profiles(console)
    console.print("Use --model NAME or --model /path/to/weights (a HF folder or a .gguf file).")
    console.print("Weights marked 'no': put the folder where `weights` points (models/README.md "
                  "says how), or set NEXAGAUGE_MODELS_DIR.")


def print_profiles(console: Console) -> None:
    """The profiles' table, fitted to `console`'s width (cli/tables.py)."""
    rows = []
    for prof, present in list_profiles():
        where = (
            prof.weights
            if prof.weights.startswith("package:")
            else str(expand_weights(prof.weights))
        )
        note = "DEMO: verdicts for trying the tool only" if prof.demo else prof.description
        rows.append([
            prof.name, "[green]yes[/]" if present else "[red]no[/]", escape(where),
            prof.judge_format, prof.backend, prof.dtype, prof.parallelism, escape(note),
        ])
    table, left_out = fitted_table("judge profiles", PROFILE_COLUMNS, rows, console.width)
    console.print(table)
    if left_out:
        console.print(left_out_line(left_out, PROFILE_COLUMNS, rows))


# ------------------------------------------------------------------ calibrate


@click.command(
    "calibrate",
    epilog="\b\nExamples:\n  nexagauge-local calibrate --model demo\n"
    "  nexagauge-local calibrate --model qwen2.5-7b-instruct --gpu 0\n"
    "  nexagauge-local calibrate --judge-url http://gpu-host:8000/v1 --judge-gpus 1",
)
@click.option("--model", default="demo", show_default=True, help="Profile name or weights path.")
@click.option("--gpu", "gpu", default=None, metavar="IDS", help="GPU indices, e.g. 0 or 0,1.")
@backend_option()
@click.option(
    "--n", type=click.IntRange(min=2), default=32, show_default=True, help="Requests per workload."
)
@_cache_dir_option
@verbose_option
@endpoint_options
def calibrate_cmd(
    model: str, gpu: str | None, backend: str, n: int, cache_dir: Path | None,
    **judge_server: Any,
) -> None:
    """Measure this host's judge throughput and store it for `estimate`.

    With --judge-url the judge server is measured instead: wall seconds per judgement at the
    requests in flight, device-seconds only with --judge-gpus (as `run` counts them)."""
    from nexagauge_local.app.throughput import calibrate_judge, resolve_calibration_judge

    cache = resolve_cache_dir(cache_dir)
    console = _console()
    with cli_errors():
        factory = resolve_calibration_judge(model, backend=backend, gpu_ids=parse_gpu_ids(gpu),
                                            cache_dir=cache,
                                            endpoint=endpoint_settings(judge_server))
        if factory.decision.demo:
            console.print(f"[yellow]note:[/] {DEMO_NOTICE}")
        done = calibrate_judge(factory, n, cache)
    result = done.result
    console.print(f"loaded {done.fingerprint} in {done.load_seconds:.1f} s")
    server = str(result["device"]).startswith("server:")
    unit = ("wall" if server and not done.gpu_count else "server GPU" if server
            else "GPU" if done.gpu_count else "CPU device")
    how = "through the server" if server else "batched"
    console.print(
        f"prompt {result['prompt_tokens_per_s']:.0f} tok/s, output "
        f"{result['output_tokens_per_s']:.1f} tok/s, {result['seconds_per_judgement']:.2f} "
        f"{unit}-seconds per red-team judgement ({how}, n={n}); parsed {result['parsed']}/{2 * n}"
    )
    console.print(f"calibration written to {done.path}")


# ------------------------------------------------------------------ cache


@click.group(
    "cache",
    epilog="\b\nExamples:\n  nexagauge-local cache stats\n"
    "  nexagauge-local cache clear --node redteam",
)
def cache_group() -> None:
    """Inspect or clear the judge and embedding caches (SQLite, safe to delete)."""


@cache_group.command("dir", epilog="\b\nExample:\n  nexagauge-local cache dir")
@_cache_dir_option
def cache_dir_cmd(cache_dir: Path | None) -> None:
    """Print the cache folder (judge and embedding caches)."""
    click.echo(str(resolve_cache_dir(cache_dir)))


@cache_group.command("stats", epilog="\b\nExample:\n  nexagauge-local cache stats")
@_cache_dir_option
def cache_stats_cmd(cache_dir: Path | None) -> None:
    """Entries, size on disk and cache hits per node, and of the embedding cache per model."""
    with cli_errors():  # a damaged cache: its one line, exit 2
        stats = cache_stats(cache_dir)
        emb = embedding_cache_stats(cache_dir)
    table = Table(title=f"judge cache {stats.path}")
    for col in ("node", "entries", "hits"):
        table.add_column(col, justify="right" if col != "node" else "left")
    for node in sorted(set(stats.entries_by_node) | set(stats.hits_by_node)):
        table.add_row(
            node, str(stats.entries_by_node.get(node, 0)), str(stats.hits_by_node.get(node, 0))
        )
    table.add_row("[b]total[/]", str(stats.entries), str(sum(stats.hits_by_node.values())))
    console = _console()
    console.print(table)
    console.print(f"size: {stats.size_bytes / 1e6:.2f} MB")
    table = Table(title=f"embedding cache {emb.path}")
    table.add_column("model and dtype")
    table.add_column("entries", justify="right")
    for model, n in sorted(emb.entries_by_model.items()):
        table.add_row(model, str(n))
    table.add_row("[b]total[/]", str(emb.entries))
    console.print(table)
    console.print(f"hits: {emb.hits}; size: {emb.size_bytes / 1e6:.2f} MB; "
                  f"bound: {emb.max_entries} entries (least recently used deleted past it)")


@cache_group.command(
    "clear",
    epilog="\b\nExamples:\n  nexagauge-local cache clear\n"
    "  nexagauge-local cache clear --node grounding",
)
@click.option("--node", default=None, help="Only this node's judge entries (embeddings kept).")
@click.option("--embeddings", "only_embeddings", is_flag=True,
              help="Only the embedding cache (judge answers kept).")
@_cache_dir_option
def cache_clear_cmd(node: str | None, only_embeddings: bool, cache_dir: Path | None) -> None:
    """Delete cached judge answers (all, or one node's) and cached embeddings."""
    if node and only_embeddings:
        raise click.UsageError("--node and --embeddings clear different caches: give one")
    with cli_errors():  # a damaged cache: its one line, exit 2
        if not only_embeddings:
            deleted = clear_cache(cache_dir, node)
            click.echo(
                f"deleted {deleted} entr{'y' if deleted == 1 else 'ies'}"
                + (f" of node {node}" if node else "")
            )
        if not node:
            vectors = clear_embedding_cache(cache_dir)
            click.echo(f"deleted {vectors} cached embedding{'' if vectors == 1 else 's'}")

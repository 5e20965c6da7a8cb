"""`run`, `estimate` and `nodes`: the commands that read a dataset and walk the graph.

Option parsing and printing only; the work is in app/run.py and app/run_forecast.py.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from rich.console import Console, RenderableType
from rich.markup import escape

from nexagauge_local.cli.errors import cli_errors
from nexagauge_local.cli.exit_codes import JUDGE_FAILED
from nexagauge_local.cli.options import (
    backend_option,
    choice_option,
    config_option,
    dataset_options,
    endpoint_options,
    endpoint_settings,
    model_option,
    parse_gpu_ids,
    parse_models,
    parse_thresholds,
    quiet_libraries,
    target_argument,
    threshold_option,
    verbose_option,
)
from nexagauge_local.cli.tables import Column, fitted_table
from nexagauge_local.graph import NODES, TARGETS
from nexagauge_local.settings import (
    GRAMMAR_CHOICES,
    LONG_INPUTS_CHOICES,
    REFALIGN_UNITS_CHOICES,
    RunSettings,
    default_cache_dir,
)

if TYPE_CHECKING:  # typing only: --help must not import the estimate service
    from nexagauge_local.app.run_config import RunConfig
    from nexagauge_local.app.run_forecast import Estimate


@click.command("run")
@click.argument("target", callback=lambda c, p, v: target_argument(v), metavar="TARGET")
@dataset_options
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Where case_report/, metrics/, summary.json, report.html and manifest.json go. "
                   "The run writes beside it and replaces the folder whole at the end, so it "
                   "holds the previous complete run until then; one run at a time.")
@click.option("--overwrite", is_flag=True,
              help="Replace --output-dir even when it holds files no run wrote (they are "
                   "deleted). Without it such a folder is refused.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              default=default_cache_dir, show_default="~/.cache/nexagauge-local",
              help="Judge cache and derived model files.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the judge or embedding cache.")
@model_option("")
@threshold_option()
@backend_option("auto: vllm when installed and a GPU is visible, else hf.")
@click.option("--gpu", "gpu", metavar="IDS", help="GPU indices to use, e.g. 0 or 0,1.")
@click.option("--gpu-hour-price", type=click.FloatRange(min=0), help="USD per GPU-hour, to fill `cost`.")
@click.option("--shard-size", type=click.IntRange(min=1), default=5000, show_default=True,
              help="Cases per shard; memory stays bounded and finished shards are on disk.")
@click.option("--cluster", metavar="ADDRESS",
              help="Send the judge work to a Ray cluster: auto (Ray running on this host), local "
                   "(a private one), HOST:PORT or ray://HOST:PORT; options as ?workers=N&batch=N "
                   "(see docs/scale-out.md). Needs the `cluster` extra.")
@choice_option("--embed-dtype", ("auto", "float32", "bfloat16"), "auto",
               "Embeddings for refiner/refalign. auto: bfloat16 on a GPU or a CPU with native bf16 "
               "(about 2x faster; cosines move by <0.004), else float32.")
@choice_option("--refalign-units", REFALIGN_UNITS_CHOICES, "nexa-gauge",
               "refalign's units. nexa-gauge: as nexa-gauge 0.1.19 (a text under 100 cl100k "
               "tokens is one unit, a longer one semchunk chunks of 100 tokens; the output's "
               "chunks MMR-refined to --refalign-output-top-k), so scores match its; "
               "sentences: sentence groups of up to 320 characters, every distinct one kept.")
@click.option("--refalign-output-top-k", type=click.IntRange(min=0), default=3, show_default=True,
              help="With --refalign-units nexa-gauge: output chunks kept by the MMR refiner "
                   "(nexa-gauge's --refiner-top-k); 0 keeps all. The reference side is refined "
                   "only when a record's refalign block sets refine_top_k.")
@choice_option("--long-inputs", LONG_INPUTS_CHOICES, "fail",
               "A judge prompt longer than the judge's context window (max_model_len, "
               "max_tokens included): fail: that request alone fails with an error naming "
               "case, node, metric and token counts; truncate-middle: the middle of its "
               "longest evaluated text is cut, with a visible marker in the judged text and "
               "`input_truncated` in the case report. `estimate` lists such cases first.")
@choice_option("--grammar-backend", GRAMMAR_CHOICES, "auto",
               "Structured-decoding engine. auto: the profile's, else xgrammar on vLLM and "
               "outlines on the hf backend. hf: outlines or guidance (llguidance: a schema "
               "compiles in milliseconds instead of seconds and holds no index in memory); "
               "vLLM: xgrammar, guidance or outlines. The judge cache keeps each engine's "
               "answers apart.")
@click.option("--sign", "sign_key", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              metavar="KEYFILE", help="Sign manifest.json with this Ed25519 key (see `keys new`).")
@click.option("--quiet", "-q", is_flag=True,
              help="Print only warnings, errors and the final summary: no progress bars, "
                   "neither ours nor the model libraries'.")
@verbose_option
@endpoint_options
@config_option()
def run_cmd(target: str, input_path: str, limit: int | None, start: int, end: int | None,
            fields: tuple[str, ...], on_error: str, output_dir: Path, overwrite: bool,
            cache_dir: Path, no_cache: bool, models: tuple[str, ...],
            thresholds: tuple[str, ...], backend: str, gpu: str | None,
            gpu_hour_price: float | None, shard_size: int, cluster: str | None,
            embed_dtype: str, refalign_units: str, refalign_output_top_k: int, long_inputs: str,
            grammar_backend: str, sign_key: Path | None, quiet: bool,
            run_config: RunConfig | None, **judge_server: Any) -> None:
    """Run TARGET and everything it needs over a dataset.

    TARGET is a node (see `nexagauge-local nodes`); `eval` runs every metric branch a case is
    eligible for.

    \b
    Examples:
      nexagauge-local run eval --input data.jsonl --output-dir out --gpu 0
      nexagauge-local run refmatch --input sample.json --output-dir out --limit 10
      nexagauge-local run eval --input data.jsonl --output-dir out --start 100 --end 200
      nexagauge-local run eval --input data.jsonl --output-dir out \\
          --model qwen2.5-7b-instruct --model redteam=llama-3.1-8b-instruct
      cat data.jsonl | nexagauge-local run redteam --input - --output-dir out
      nexagauge-local run eval --input big.jsonl --output-dir out --cluster ray://head:10001
      nexagauge-local run eval --config run.toml --input data.jsonl --output-dir out
      nexagauge-local run redteam --input data.jsonl --output-dir out \
          --judge-url http://127.0.0.1:8000/v1 --judge-concurrency 32
    """
    if quiet:
        quiet_libraries()
    from nexagauge_local.app import run as app_run
    from nexagauge_local.app.inputs import open_dataset
    from nexagauge_local.cli.progress import RichEvents

    model, node_models = parse_models(
        models, run_config.options.get("model", ()) if run_config else ())
    settings = RunSettings(
        target=target, output_dir=output_dir, overwrite=overwrite, limit=limit, start=start,
        end=end, on_error=on_error, cache_dir=cache_dir,
        use_cache=not no_cache, model=model, backend=backend,
        gpu_ids=parse_gpu_ids(gpu), thresholds=parse_thresholds(thresholds),
        gpu_hour_price=gpu_hour_price, shard_size=shard_size, cluster=cluster, progress=not quiet,
        embed_dtype=embed_dtype, long_inputs=long_inputs, grammar_backend=grammar_backend,
        refalign_units=refalign_units, refalign_output_top_k=refalign_output_top_k,
        # the command line's NODE=PROFILE beats the config's [run.models]
        node_models={**(run_config.models if run_config else {}), **node_models},
        config=run_config.source if run_config else None,
        **endpoint_settings(judge_server),
    )
    console = Console(stderr=True)
    with cli_errors(resumable=True):
        result = app_run.run(settings, lambda tmp: open_dataset(input_path, fields, limit, tmp,
                                                                start=start, end=end),
                             events=RichEvents(console), sign_key=sign_key)
    cases = result.summary.cases
    console.print(f"[green]done[/]: {cases.valid} case(s), {cases.skipped} skipped record(s), "
                  f"{cases.duplicates} duplicate(s) -> {output_dir}")
    for line in result.metrics:
        console.print(f"  {line.name:<10} scored {line.scored:>5}  avg {_fmt(line.avg_score)}"
                      f"  pass rate {_fmt(line.pass_rate)}")
    reused = result.judge_reused
    if reused["reused"] or reused["retried"]:
        retried = f", retried {reused['retried']} that had failed" if reused["retried"] else ""
        console.print(f"  judge: reused {reused['reused']} cached judgement(s), computed "
                      f"{reused['computed']}{retried}")
    for name, o in result.judge_outcomes.items():
        if o.truncated:
            console.print(f"  [yellow]{name}[/]: {o.truncated} request(s) judged with the "
                          "middle of a long text cut (--long-inputs truncate-middle)")
        if o.failed and o.failed < o.requests:
            console.print(f"  [yellow]{name}[/]: the judge failed on {o.failed} of "
                          f"{o.requests} request(s); first error: {o.first_error}",
                          soft_wrap=True)
    if result.notice:
        console.print(f"[bold yellow]note:[/] {result.notice}")
    report = output_dir / "report.html"
    click.echo(str(report if report.exists() else output_dir / "summary.json"))
    for name in result.judge_failed_everywhere:
        o = result.judge_outcomes[name]
        click.echo(f"error: the judge failed on all {o.requests} request(s) of node {name}: "
                   f"{o.first_error}", err=True)
    if result.judge_failed_everywhere:
        sys.exit(JUDGE_FAILED)


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


@click.command("estimate")
@click.argument("target", callback=lambda c, p, v: target_argument(v), metavar="TARGET")
@dataset_options
@model_option("Only the judges' tokenizers are loaded.")
@backend_option("Must match the run's, since the cache key names the backend.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              default=default_cache_dir, show_default="~/.cache/nexagauge-local",
              help="Judge cache (cached requests cost nothing) and calibrations.")
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
@verbose_option
@endpoint_options
@config_option(lambda: run_cmd)
def estimate_cmd(target: str, input_path: str, limit: int | None, start: int, end: int | None,
                 fields: tuple[str, ...], on_error: str, models: tuple[str, ...], backend: str,
                 cache_dir: Path, as_json: bool, run_config: RunConfig | None,
                 **judge_server: Any) -> None:
    """Say what `run TARGET` would do and cost, without loading the judge's weights.

    Per node: eligible cases; for LLM nodes the judge requests, how many the cache already
    holds, exact prompt tokens (the judge's tokenizer and chat template), predicted output
    tokens, and GPU-seconds when `calibrate` has measured this judge on this host. grounding,
    relevance and geval depend on earlier judge answers (claims, steps), so their requests are
    built from stand-ins and marked as estimated. Deterministic nodes cost zero GPU-seconds.

    \b
    Examples:
      nexagauge-local estimate eval --input data.jsonl --limit 100
      nexagauge-local calibrate --model qwen2.5-7b-instruct --gpu 0   # then estimate again
      nexagauge-local estimate redteam --input probes.jsonl --model qwen2.5-7b-instruct --json
      nexagauge-local estimate eval --config run.toml --input data.jsonl
    """
    import json

    from nexagauge_local.app.inputs import open_dataset
    from nexagauge_local.app.run_forecast import estimate

    model, node_models = parse_models(
        models, run_config.options.get("model", ()) if run_config else ())
    settings = RunSettings(target=target, limit=limit, start=start, end=end, on_error=on_error,
                           cache_dir=cache_dir, model=model, backend=backend, progress=False,
                           node_models={**(run_config.models if run_config else {}),
                                        **node_models},
                           config=run_config.source if run_config else None,
                           **endpoint_settings(judge_server))
    with cli_errors(resumable=True):
        est = estimate(settings, lambda tmp: open_dataset(input_path, fields, limit, tmp,
                                                          start=start, end=end))
    if as_json:
        click.echo(json.dumps(est.as_dict(), indent=2))
        return
    console = Console()
    console.print(_estimate_table(est, target, console.width))
    console.print("* no judge: zero GPU-seconds.")
    _print_skips_and_long_requests(console, est, model)
    if est.judge_nodes:
        _print_estimate_basis(console, est, model)


# node names are what TARGET and --model NODE=PROFILE take; numbers are never folded
ESTIMATE_COLUMNS = (Column("node", key=True),
                    *(Column(h, key=True, justify="right") for h in (
                        "cases", "requests", "cached", "prompt tok", "output tok", "GPU-s")))


def _estimate_table(est: Estimate, target: str, width: int) -> RenderableType:
    """One row per node: cases, requests, cache hits, tokens and GPU-seconds."""
    rows = []
    for node in est.nodes:
        j = node.judge
        if j is None:
            cells = ["-", "-", "-", "-", "0" if not node.is_llm else "-"]
        else:
            mark = "~" if j["basis"] != "exact requests" else ""
            gpu = "n/a" if j["gpu_seconds"] is None else f"{mark}{j['gpu_seconds']:.1f}"
            spread = f" ±{j['output_spread']}" if j.get("output_spread") else ""
            cells = [str(j["requests"]), str(j["cached"]), f"{mark}{j['prompt_tokens']}",
                     f"~{j['output_tokens']}{spread}", gpu]
        rows.append([node.name + ("" if node.is_llm else " *"), str(node.eligible), *cells])
    table, _ = fitted_table(f"estimate {target}: {est.cases} case(s)", ESTIMATE_COLUMNS, rows,
                            width)
    return table


def _print_skips_and_long_requests(console: Console, est: Estimate, model: str) -> None:
    """Why cases were skipped, and the requests longer than the judge's context window."""
    for node in est.nodes:
        if node.skipped:
            why = ", ".join(f"{n} {r}" for r, n in Counter(node.skipped).most_common(3))
            console.print(f"{node.name}: skipped {sum(node.skipped.values())} ({why})")
    for node in est.judge_nodes:
        over = (node.judge or {}).get("over_context") or []
        if over:
            shown = ", ".join(f"{o['case_id']} ({o['metric'] or node.name}: "
                              f"{o['prompt_tokens']}+{o['max_tokens']} tokens)" for o in over[:5])
            more = f" and {len(over) - 5} more" if len(over) > 5 else ""
            console.print(f"[bold yellow]warning:[/] {node.name}: {len(over)} request(s) exceed "
                          f"the judge's context window ({(node.judge or {}).get('profile', model)}): "
                          f"{shown}{more}. A run fails "
                          "each alone; `--long-inputs truncate-middle` judges them cut.",
                          soft_wrap=True)


def _print_estimate_basis(console: Console, est: Estimate, model: str) -> None:
    """What the figures rest on: stand-ins, output-token predictions, the GPU-seconds source."""
    judged = est.judge_nodes
    first = judged[0].judge or {}
    model = first.get("profile", model)
    console.print("~ = estimated: grounding/relevance/geval requests are built from stand-in "
                  "claims/steps; output tokens are predicted.")
    sources = Counter[str]()
    for node in judged:
        sources.update((node.judge or {}).get("output_sources") or {})
    if sources:
        console.print("output tokens predicted from: " + ", ".join(
            f"{k} ({v} request(s))" for k, v in sources.most_common())
            + (" (history: this judge's past answers for the same schema, in the judge "
               "cache; ± one standard deviation)" if "history" in sources else ""),
            soft_wrap=True)
    source = first.get("gpu_seconds_source") or ""
    if first["gpu_seconds"] is None:
        console.print(f"GPU-seconds need this judge's device time from an earlier run (the "
                      f"judge cache keeps it) or a calibration on this host: "
                      f"`nexagauge-local calibrate --model {model}`.")
    elif "history" in source:
        how = ("a cost model (prompt and output tokens) fitted to this judge's answers"
               if "history model" in source else "this judge's device-seconds per token")
        console.print(f"GPU-seconds from {how} on earlier runs (judge cache)"
                      + (f", and the calibration on {first['device']}"
                         if "calibration" in source else "") + ".")
    else:
        console.print(f"GPU-seconds from the calibration on {first['device']}.")


# a node's name is what TARGET and --model NODE=PROFILE take: never cut
NODE_COLUMNS = (Column("node", key=True), Column("parents", min_width=8),
                Column("needs", min_width=8), Column("LLM", key=True),
                Column("does", min_width=12))


@click.command("nodes")
@config_option(lambda: run_cmd)
def nodes_cmd(run_config: RunConfig | None) -> None:
    """Print the node graph: what each node needs and does.

    With --config, also the node blocks the configuration gives the records (a record's own
    block wins unless the configuration's block says override = true).

    \b
    Examples:
      nexagauge-local nodes
      nexagauge-local nodes --config run.toml
    """
    rows = []
    for spec in NODES:
        needs = list(spec.requires) + ([f"{spec.block} block"] if spec.block else [])
        if spec.gathers_metrics:
            needs = ["any metric branch"]
        rows.append([spec.name, ", ".join(spec.parents) or "-", " + ".join(needs) or "-",
                     "yes" if spec.kind == "llm" else "no", escape(spec.summary)])
    console = Console()
    table, _ = fitted_table("nexagauge-local nodes (a target runs with all its ancestors)",
                            NODE_COLUMNS, rows, console.width)
    console.print(table)
    click.echo("targets: " + ", ".join(TARGETS))
    if run_config is not None:
        _print_config_blocks(run_config)


def _print_config_blocks(run_config: RunConfig) -> None:
    """The configuration's [defaults] blocks as every record without its own gets them."""
    import json

    from nexagauge_local.app.run_config import effective_blocks

    blocks = effective_blocks(RunSettings(config=run_config.source))
    source = run_config.source
    click.echo(f"blocks from {source.path} (sha256 {source.sha256[:16]}):"
               + ("" if blocks else " none"))
    for name, block in blocks.items():
        how = ("replaces every record's own" if block.pop("override")
               else "for records without their own")
        click.echo(f"  {name} ({how}): {json.dumps(block, ensure_ascii=False)}")
    for node, profile in run_config.models.items():
        click.echo(f"  judge for {node}: {profile}")

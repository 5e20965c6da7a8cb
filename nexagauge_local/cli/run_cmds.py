"""`run`, `estimate` and `nodes`: the commands that read a dataset and walk the graph."""

from __future__ import annotations

import sys
import tempfile
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.table import Table

from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import NODES, SPECS, TARGETS, UnknownTarget, eligibility, plan
from nexagauge_local.records import RecordsError, parse_field_map, spool_stdin
from nexagauge_local.settings import RunSettings, default_cache_dir

BAD_INPUT = 2


def _parse_gpus(value: str | None) -> list[int]:
    if not value:
        return []
    try:
        return [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected GPU indices such as 0 or 0,1") from None


def dataset_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--input", "input_path", required=True, metavar="PATH",
                     help="Dataset: JSON array, JSONL or CSV file; '-' reads JSONL from stdin."),
        click.option("--limit", type=click.IntRange(min=1), help="Use only the first N records."),
        click.option("--field", "fields", multiple=True, metavar="LOGICAL=COLUMN",
                     help="Map a column to a logical field, e.g. --field output=model_answer. Repeatable."),
        click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
                     help="fail: stop before any work if a record is bad (exit 2). "
                          "skip: run the good records and list the bad ones in summary.json."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def _target(value: str) -> str:
    try:
        plan(value)
    except UnknownTarget as exc:
        raise click.BadParameter(str(exc)) from None
    return value


def _open_dataset(input_path: str, fields: tuple[str, ...], limit: int | None, tmp: Path) -> Dataset:
    try:
        field_map = parse_field_map(fields)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    if input_path == "-":
        return Dataset(spool_stdin(tmp), field_map, limit, display="<stdin>", fmt="jsonl")
    path = Path(input_path)
    if not path.is_file():
        raise click.UsageError(f"--input {input_path}: no such file")
    return Dataset(path, field_map, limit)


def _fail_records(exc: RecordsError) -> None:
    for err in exc.errors:
        click.echo(str(err), err=True)
    click.echo(f"{len(exc.errors)} problem(s) in the input; nothing was run "
               "(use --on-error skip to run the good records).", err=True)
    sys.exit(BAD_INPUT)


@click.command("run")
@click.argument("target", callback=lambda c, p, v: _target(v), metavar="TARGET")
@dataset_options
@click.option("--output-dir", type=click.Path(file_okay=False, path_type=Path), required=True,
              help="Where case_report/, metrics/, summary.json and report.html go.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              default=default_cache_dir, show_default="~/.cache/nexagauge-local",
              help="Judge cache and derived model files.")
@click.option("--no-cache", is_flag=True, help="Do not read or write the judge cache.")
@click.option("--model", default="demo", show_default=True,
              help="Judge profile name (see `models`) or a path to weights.")
@click.option("--backend", type=click.Choice(["auto", "hf", "vllm"]), default="auto", show_default=True,
              help="auto: vllm when installed and a GPU is visible, else hf.")
@click.option("--gpu", "gpu", metavar="IDS", help="GPU indices to use, e.g. 0 or 0,1.")
@click.option("--gpu-hour-price", type=click.FloatRange(min=0), help="USD per GPU-hour, to fill `cost`.")
@click.option("--shard-size", type=click.IntRange(min=1), default=5000, show_default=True,
              help="Cases per shard; memory stays bounded and finished shards are on disk.")
@click.option("--cluster", metavar="ADDRESS",
              help="Send the judge work to a Ray cluster: auto (Ray running on this host), local "
                   "(a private one), HOST:PORT or ray://HOST:PORT; options as ?workers=N&batch=N "
                   "(see docs/scale-out.md). Needs the `cluster` extra.")
@click.option("--embed-dtype", type=click.Choice(["auto", "float32", "bfloat16"]), default="auto",
              show_default=True,
              help="Embeddings for refiner/refalign. auto: bfloat16 on a GPU or a CPU with native bf16 "
                   "(about 2x faster; cosines move by <0.004), else float32.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def run_cmd(target: str, input_path: str, limit: int | None, fields: tuple[str, ...], on_error: str,
            output_dir: Path, cache_dir: Path, no_cache: bool, model: str, backend: str,
            gpu: str | None, gpu_hour_price: float | None, shard_size: int, cluster: str | None,
            embed_dtype: str, quiet: bool) -> None:
    """Run TARGET and everything it needs over a dataset.

    TARGET is a node (see `nexagauge-local nodes`); `eval` runs every metric branch a case is
    eligible for.

    \b
    Examples:
      nexagauge-local run eval --input data.jsonl --output-dir out --gpu 0
      nexagauge-local run refmatch --input sample.json --output-dir out --limit 10
      cat data.jsonl | nexagauge-local run redteam --input - --output-dir out
      nexagauge-local run eval --input big.jsonl --output-dir out --cluster ray://head:10001
    """
    from nexagauge_local.judge.client import JudgeClient
    from nexagauge_local.judge.profiles import WeightsMissing
    from nexagauge_local.runner import Runner

    settings = RunSettings(
        target=target, output_dir=output_dir, limit=limit, on_error=on_error, cache_dir=cache_dir,
        use_cache=not no_cache, model=model, backend=backend, gpus=_parse_gpus(gpu),
        gpu_hour_price=gpu_hour_price, shard_size=shard_size, cluster=cluster, progress=not quiet,
        embed_dtype=embed_dtype,
    )
    console = Console(stderr=True)
    needs_judge = any(s.kind == "llm" for s in plan(target))
    if needs_judge:
        from nexagauge_local.judge.factory import make_backend_factory

        try:  # resolve the judge now: absent weights fail before any work, saying where to put them
            make_backend_factory(settings)
        except WeightsMissing as exc:
            raise click.ClickException(str(exc)) from None
    if cluster and needs_judge:  # no Ray, a bad value or an unreachable cluster: stop, exit 2
        from nexagauge_local.cluster import ClusterUnavailable, connect_cluster

        try:
            connect_cluster(cluster)
        except ClusterUnavailable as exc:
            click.echo(f"Error: {exc}", err=True)
            sys.exit(BAD_INPUT)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = _open_dataset(input_path, fields, limit, Path(tmp))
        opened: list[JudgeClient] = []  # closed below: data-parallel engines and cluster actors

        def judge_factory() -> JudgeClient:
            opened.append(JudgeClient.from_settings(settings))
            return opened[-1]

        runner = Runner(settings, console=console, judge_factory=judge_factory if needs_judge else None)
        try:
            outcome = runner.run(dataset)
        except RecordsError as exc:
            _fail_records(exc)
            return
        finally:
            for client in opened:
                client.close()
    cases = outcome.summary["cases"]
    console.print(f"[green]done[/]: {cases['valid']} case(s), {cases['skipped']} skipped record(s), "
                  f"{cases['duplicates']} duplicate(s) -> {output_dir}")
    for name, summ in outcome.node_summaries.items():
        if SPECS[name].metric:
            rate = summ["pass_rate"]
            console.print(f"  {name:<10} scored {summ['scored']:>5}  avg {_fmt(summ['avg_score'])}"
                          f"  pass rate {_fmt(rate)}")
    judge = outcome.summary.get("judge") or {}
    if judge.get("notice"):
        console.print(f"[bold yellow]note:[/] {judge['notice']}")
    report = output_dir / "report.html"
    click.echo(str(report if report.exists() else output_dir / "summary.json"))


def _fmt(x: float | None) -> str:
    return "  -  " if x is None else f"{x:.3f}"


@click.command("estimate")
@click.argument("target", callback=lambda c, p, v: _target(v), metavar="TARGET")
@dataset_options
@click.option("--model", default="demo", show_default=True,
              help="Judge profile name (see `models`) or a path to weights; only its tokenizer is loaded.")
@click.option("--backend", type=click.Choice(["auto", "hf", "vllm"]), default="auto", show_default=True,
              help="Must match the run's, since the cache key names the backend.")
@click.option("--cache-dir", type=click.Path(file_okay=False, path_type=Path),
              default=default_cache_dir, show_default="~/.cache/nexagauge-local",
              help="Judge cache (cached requests cost nothing) and calibrations.")
@click.option("--json", "as_json", is_flag=True, help="Print the estimate as JSON.")
def estimate_cmd(target: str, input_path: str, limit: int | None, fields: tuple[str, ...],
                 on_error: str, model: str, backend: str, cache_dir: Path, as_json: bool) -> None:
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
    """
    import json

    specs = [s for s in plan(target) if s.name != "report"]
    settings = RunSettings(target=target, limit=limit, on_error=on_error, cache_dir=cache_dir,
                           model=model, backend=backend, progress=False)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = _open_dataset(input_path, fields, limit, Path(tmp))
        scan = dataset.scan()
        if scan.errors and on_error == "fail":
            _fail_records(RecordsError(scan.errors))
        eligible: Counter[str] = Counter()
        reasons: dict[str, Counter[str]] = {s.name: Counter() for s in specs}
        for case in dataset.cases():
            ran: dict[str, bool] = {}
            for spec in specs:
                reason = eligibility(case, spec, ran)
                ran[spec.name] = reason is None
                if reason is None:
                    eligible[spec.name] += 1
                else:
                    reasons[spec.name][reason] += 1
        judge = _judge_estimates(dataset, settings) if any(s.kind == "llm" for s in specs) else {}
    if as_json:
        click.echo(json.dumps({"target": target, "cases": scan.valid, "nodes": {
            s.name: {"kind": s.kind, "eligible": eligible[s.name],
                     "skipped": dict(reasons[s.name]), **({"judge": judge[s.name]} if s.name in judge else {})}
            for s in specs}}, indent=2))
        return
    table = Table(title=f"estimate {target}: {scan.valid} case(s)")
    for col in ("node", "cases", "requests", "cached", "prompt tok", "output tok", "GPU-s"):
        table.add_column(col, justify="left" if col == "node" else "right")
    for spec in specs:
        est = judge.get(spec.name)
        if est is None:
            cells = ["-", "-", "-", "-", "0" if spec.kind != "llm" else "-"]
        else:
            mark = "~" if est["basis"] != "exact requests" else ""
            gpu = "n/a" if est["gpu_seconds"] is None else f"{mark}{est['gpu_seconds']:.1f}"
            cells = [str(est["requests"]), str(est["cached"]), f"{mark}{est['prompt_tokens']}",
                     f"~{est['output_tokens']}", gpu]
        table.add_row(spec.name + ("" if spec.kind == "llm" else " *"), str(eligible[spec.name]), *cells)
    console = Console()
    console.print(table)
    console.print("* no judge: zero GPU-seconds.")
    for spec in specs:
        if reasons[spec.name]:
            why = ", ".join(f"{n} {r}" for r, n in reasons[spec.name].most_common(3))
            console.print(f"{spec.name}: skipped {sum(reasons[spec.name].values())} ({why})")
    if judge:
        first = next(iter(judge.values()))
        console.print("~ = estimated: grounding/relevance/geval requests are built from stand-in "
                      "claims/steps; output tokens are predicted.")
        if first["gpu_seconds"] is None:
            console.print(f"GPU-seconds need a calibration of this judge on this host: "
                          f"`nexagauge-local calibrate --model {model}`.")
        else:
            console.print(f"GPU-seconds from the calibration on {first['device']}.")


def _judge_estimates(dataset: Dataset, settings: RunSettings) -> dict[str, dict[str, Any]]:
    """Resolve the judge (tokenizer only) and estimate its requests; a missing model is a
    usage error naming where the weights should be."""
    from nexagauge_local.estimate.plan import judge_estimates
    from nexagauge_local.judge.factory import make_backend_factory
    from nexagauge_local.judge.hf_backend import TokenCounter
    from nexagauge_local.judge.profiles import ProfileNotFound, WeightsMissing

    try:
        factory = make_backend_factory(settings)
    except (WeightsMissing, ProfileNotFound) as exc:
        raise click.ClickException(str(exc)) from None
    counter = TokenCounter(factory.profile, settings.cache_dir)
    return judge_estimates(dataset, settings, counter, factory.fingerprint)


@click.command("nodes")
def nodes_cmd() -> None:
    """Print the node graph: what each node needs and does.

    \b
    Example:
      nexagauge-local nodes
    """
    table = Table(title="nexagauge-local nodes (a target runs with all its ancestors)")
    for col in ("node", "parents", "needs", "LLM", "does"):
        table.add_column(col)
    for spec in NODES:
        needs = list(spec.requires) + ([f"{spec.block} block"] if spec.block else [])
        if spec.name == "eval":
            needs = ["any metric branch"]
        table.add_row(spec.name, ", ".join(spec.parents) or "-", " + ".join(needs) or "-",
                      "yes" if spec.kind == "llm" else "no", spec.summary)
    Console().print(table)
    click.echo("targets: " + ", ".join(TARGETS))

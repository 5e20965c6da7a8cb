"""Options several commands share: the dataset options, TARGET and the GPU list."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from typing import Any

import click

from nexagauge_local.graph import UnknownTarget, plan


def parse_gpu_ids(value: str | None) -> list[int]:
    """`--gpu 0` or `--gpu 0,1` as a list of GPU indices (empty: none requested)."""
    if not value:
        return []
    try:
        return [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected GPU indices such as 0 or 0,1") from None


def target_argument(value: str) -> str:
    """TARGET must be a node of the graph; otherwise a usage error listing the targets."""
    try:
        plan(value)
    except UnknownTarget as exc:
        raise click.BadParameter(str(exc)) from None
    return value


def choice_option(
    name: str, choices: Iterable[str], default: str, help: str | None = None
) -> Callable[..., Any]:
    """--NAME taking one of `choices`, its default shown in --help."""
    return click.option(
        name, type=click.Choice(list(choices)), default=default, show_default=True, help=help
    )


def backend_option(help: str | None = None) -> Callable[..., Any]:
    """--backend: the judge or responder backend, auto by default."""
    return choice_option("--backend", ("auto", "hf", "vllm"), "auto", help)


def dataset_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    opts = [
        click.option("--input", "input_path", required=True, metavar="PATH",
                     help="Dataset: JSONL, JSON array, CSV/TSV, Parquet or Arrow file, a Hugging "
                          "Face save_to_disk folder; gzip/bz2/xz/zstd compressed too; a pipe "
                          "such as <(zcat data.jsonl.gz); '-' reads stdin (README, input "
                          "formats)."),
        click.option("--limit", type=click.IntRange(min=1), help="Use only the first N records."),
        click.option("--field", "fields", multiple=True, metavar="LOGICAL=COLUMN",
                     help="Map a column to a logical field, e.g. --field output=model_answer; a "
                          "dotted path reaches into nested columns (output=response.text). "
                          "Repeatable."),
        click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
                     help="fail: stop before any work if a record is bad (exit 2). "
                          "skip: run the good records and list the bad ones in summary.json."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def quiet_libraries() -> None:
    """Under -q, silence the progress bars the model libraries draw themselves (the GGUF
    de-quantising and weight-loading bars of transformers, hub downloads), which ignore our
    progress setting.

    Why environment variables: tqdm reads TQDM_* once, when it is first imported, and the
    libraries import it lazily, after option parsing; the CLI process is the right scope for
    them. Values the user set explicitly are kept.
    """
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")



ENDPOINT_FIELDS = ("judge_url", "judge_api_key", "judge_model_name", "judge_concurrency",
                   "judge_revision", "judge_gpus")


def endpoint_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--judge-url and its companions: judge through an OpenAI-compatible server. They reach
    the command as keyword arguments named as RunSettings' fields (`endpoint_settings`)."""
    opts = [
        click.option("--judge-url", metavar="URL",
                     help="Judge through an OpenAI-compatible server (vLLM, SGLang, llama.cpp, "
                          "Ollama) instead of loading a model, e.g. --judge-url "
                          "http://127.0.0.1:8000/v1. Overrides an endpoint profile's url."),
        click.option("--judge-api-key", metavar="KEY",
                     help="The server's API key (or NEXAGAUGE_JUDGE_API_KEY, or the profile's "
                          "api_key_env); never written to summary.json or manifest.json."),
        click.option("--judge-model-name", metavar="ID",
                     help="The served model to judge with, as the server's GET /models names "
                          "it; needed only when it serves several."),
        click.option("--judge-concurrency", type=click.IntRange(min=1), metavar="N",
                     help="Judge requests in flight at once (profile's concurrency, default 16)."),
        click.option("--judge-revision", metavar="REV",
                     help="What the served weights are (a commit, a date): part of the judge's "
                          "fingerprint, so cached answers of another revision are not reused."),
        click.option("--judge-gpus", type=click.IntRange(min=1), metavar="N",
                     help="The server's GPUs, to count device-seconds (wall time x N); without "
                          "it gpu_seconds is null."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn


def endpoint_settings(values: dict[str, Any]) -> dict[str, Any]:
    """The --judge-* values given, as RunSettings keyword arguments; unset ones are left out
    so NEXAGAUGE_JUDGE_* environment variables still apply."""
    return {k: v for k, v in values.items() if k in ENDPOINT_FIELDS and v is not None}

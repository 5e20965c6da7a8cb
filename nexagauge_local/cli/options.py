"""Options several commands share: the dataset options, TARGET and the GPU list."""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import click

from nexagauge_local.cli.library_logs import configure_library_output
from nexagauge_local.graph import JUDGED_NODES, UnknownTarget, plan
from nexagauge_local.settings import ENDPOINT_FIELDS, ENDPOINT_PREFIX

DEFAULT_MODEL = "demo"


def parse_gpu_ids(value: str | None) -> list[int]:
    """`--gpu 0` or `--gpu 0,1` as a list of GPU indices (empty: none requested)."""
    if not value:
        return []
    try:
        return [int(x) for x in value.split(",") if x.strip()]
    except ValueError:
        raise click.BadParameter(f"{value!r}: expected GPU indices such as 0 or 0,1") from None


def threshold_option() -> Callable[..., Any]:
    return click.option(
        "--threshold", "thresholds", multiple=True, metavar="METRIC=VALUE",
        help="A redteam metric's pass threshold instead of 0.6 (passed = score >= VALUE), e.g. "
             "--threshold toxicity=0.82: the best-F1 threshold `agreement` fitted on your "
             "labels for a guard judge's probabilities (judge it by its cross-validated F1). "
             "Repeatable; over the judge profile's "
             "`thresholds`. result[0] then names its threshold.")


def parse_thresholds(values: Sequence[str]) -> dict[str, float]:
    """METRIC=VALUE items as a dict; a usage error (exit 2) for a malformed item or a value
    outside 0..1."""
    out: dict[str, float] = {}
    for value in values:
        metric, eq, number = value.partition("=")
        try:
            threshold = float(number)
        except ValueError:
            threshold = -1.0
        if not eq or not metric.strip() or not 0.0 <= threshold <= 1.0:
            raise click.BadParameter(f"{value!r}: expected METRIC=VALUE with VALUE in 0..1, "
                                     "e.g. toxicity=0.82", param_hint="--threshold")
        out[metric.strip()] = threshold
    return out


def model_option(what: str) -> Callable[..., Any]:
    """--model, repeatable: PROFILE for every LLM node, NODE=PROFILE for one node (as
    nexa-gauge's --llm-model NODE=MODEL); parsed by `parse_models`."""
    llm = ", ".join(JUDGED_NODES)
    return click.option(
        "--model", "models", multiple=True, metavar="PROFILE|NODE=PROFILE",
        help=f"The judge: a profile name (see `models`) or a path to weights, for every LLM node "
             f"(default {DEFAULT_MODEL}); NODE=PROFILE gives one node its own judge, e.g. "
             f"--model redteam=llama-3.1-8b-instruct --model qwen2.5-7b-instruct. Repeatable; "
             f"NODE is one of {llm}. {what}")


def parse_models(values: tuple[str, ...],
                 config: Sequence[str] = ()) -> tuple[str, dict[str, str]]:
    """The default profile and node -> profile from --model values, completed by a run
    configuration's `model` values (`config`) where the command line leaves a gap: click drops
    the config's value for an option given on the command line, and `--model redteam=X` alone
    must not forget the config's default judge."""
    default, per_node = parse_model_items(values)
    if config:
        config_default, config_nodes = parse_model_items(tuple(config))
        default = default or config_default
        per_node = {**config_nodes, **per_node}
    return default or DEFAULT_MODEL, per_node


def parse_model_items(values: tuple[str, ...]) -> tuple[str | None, dict[str, str]]:
    """The default profile (None when not given) and node -> profile from --model values; a
    usage error (exit 2) for a malformed item, an unknown node, a node named twice or two
    defaults.

    An item is NODE=PROFILE when the text before its first '=' is a bare name (no path
    separator), so a weights path with '=' in it stays a path."""
    llm = JUDGED_NODES
    default: str | None = None
    per_node: dict[str, str] = {}
    for value in values:
        node, eq, profile = value.partition("=")
        if not eq or "/" in node or "\\" in node or node.startswith("."):
            if default is not None and default != value:
                raise click.BadParameter(f"{value!r}: a second default judge (already "
                                         f"{default!r}); give the others as NODE=PROFILE",
                                         param_hint="--model")
            default = value
            continue
        if not node or not profile:
            raise click.BadParameter(f"{value!r}: expected NODE=PROFILE, e.g. redteam=demo",
                                     param_hint="--model")
        if node not in llm:
            raise click.BadParameter(f"{value!r}: {node!r} is not an LLM node; choose one of: "
                                     f"{', '.join(llm)}", param_hint="--model")
        if per_node.get(node, profile) != profile:
            raise click.BadParameter(f"{value!r}: {node} already has --model "
                                     f"{node}={per_node[node]}", param_hint="--model")
        per_node[node] = profile
    return default, per_node


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
                          "such as <(zcat data.jsonl.gz); '-' reads stdin (docs/data-formats.md)."),
        click.option("--limit", type=click.IntRange(min=1),
                     help="Use only the first N records (of the --start/--end slice when given)."),
        click.option("--start", type=click.IntRange(min=0), default=0, show_default=True,
                     metavar="N", help="First record to use, 0-based (as nexa-gauge's --start); "
                     "messages still name the file's own line or row."),
        click.option("--end", type=click.IntRange(min=1), metavar="M",
                     help="Stop before record M, 0-based (as nexa-gauge's --end): --start 100 "
                          "--end 200 uses records 100..199; --limit then counts from --start."),
        click.option("--field", "fields", multiple=True, metavar="LOGICAL=COLUMN",
                     help="Map a column to a logical field, e.g. --field output=model_answer; a "
                          "dotted path reaches into nested columns (output=response.text). "
                          "Repeatable."),
        click.option("--on-error", type=click.Choice(["fail", "skip"]), default="fail", show_default=True,
                     help="fail: stop before any work if a record is bad (exit 2). "
                          "skip: run the good records and list the bad ones in summary.json."),
    ]
    @functools.wraps(fn)
    def checked(*args: Any, **kwargs: Any) -> Any:
        start, end = kwargs.get("start", 0), kwargs.get("end")
        if end is not None and end <= start:
            raise click.UsageError(f"--end {end} must be greater than --start {start} (records "
                                   "[start, end) are used, 0-based)")
        return fn(*args, **kwargs)

    wrapped: Callable[..., Any] = checked
    for opt in reversed(opts):
        wrapped = opt(wrapped)
    return wrapped


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


def verbose_option(fn: Callable[..., Any]) -> Callable[..., Any]:
    """-v/--verbose on a command that loads a model: the model libraries' own log lines, bars
    and warnings, which are off otherwise (cli/library_logs.py). Applied while the options
    are parsed, before the command imports any of them; the command never sees the value."""

    def apply(ctx: click.Context, param: click.Parameter, value: bool) -> bool:
        configure_library_output(verbose=value)
        return value

    return click.option(
        "--verbose", "-v", is_flag=True, expose_value=False, callback=apply,
        help="Also print the model libraries' own output (vLLM's and transformers' log lines, "
             "their loading bars, torch's warnings), which is hidden otherwise. Errors always "
             "show.")(fn)



def config_option(options_of: Callable[[], click.Command] | None = None) -> Callable[..., Any]:
    """--config FILE: a run configuration (app/run_config.py), read before the other options.

    Its [run] options become the defaults of this command's options through click's
    `default_map`, so an option given on the command line beats the config (its parameter
    source is COMMANDLINE, the config's DEFAULT_MAP), which beats the option's own default.
    [run] is checked against `run`'s options (`options_of`, default this command): a typo is
    an error, an option of `run` this command lacks (e.g. --output-dir for `estimate`) is
    ignored here. The parsed config is the value the command receives.
    """

    def load(ctx: click.Context, param: click.Parameter, value: Path | None) -> Any:
        if value is None:
            return None
        from nexagauge_local.app.run_config import read_run_config
        from nexagauge_local.cli.errors import cli_errors

        known = _long_options(options_of() if options_of is not None else ctx.command)
        with cli_errors():
            config = read_run_config(value, {k: _checker(ctx, o) for k, o in known.items()})
        here = {p.name for p in ctx.command.params}
        taken = {known[k].name: v for k, v in config.options.items() if known[k].name in here}
        ctx.default_map = {**(ctx.default_map or {}), **taken}
        return config

    return click.option(
        "--config", "run_config", type=click.Path(exists=True, dir_okay=False, path_type=Path),
        is_eager=True, callback=load, metavar="FILE",
        help="A run configuration (TOML): [run] options by their long names, a judge per node "
             "in [run.models], and node blocks for records that lack one in [defaults.NODE] "
             "(override = true: also for those that have one). An option on the command line "
             "beats the file. No credential in it (the manifest keeps its text): a "
             "judge-api-key there is refused, use NEXAGAUGE_JUDGE_API_KEY. Example: --config "
             "run.toml (docs/configuration.md).")


def _long_options(command: click.Command) -> dict[str, click.Option]:
    """A command's options by long name with underscores (output_dir, no_cache, input)."""
    out: dict[str, click.Option] = {}
    for param in command.params:
        if not isinstance(param, click.Option) or param.name == "run_config":
            continue
        for opt in param.opts:
            if opt.startswith("--"):
                out[opt[2:].replace("-", "_")] = param
    return out


def _checker(ctx: click.Context, option: click.Option) -> Callable[[Any], Any]:
    """A config value as `option` takes it (its type's conversion and checks); ValueError with
    click's reason when it does not. A table for a repeatable option (`field = {output =
    "answer"}`) is its KEY=VALUE pairs."""

    def check(value: Any) -> Any:
        if option.multiple and isinstance(value, dict):
            value = [f"{k}={v}" for k, v in value.items()]
        if option.multiple and isinstance(value, str):
            value = [value]
        if isinstance(value, (dict, list)) and not option.multiple:
            raise ValueError(f"expected one value, got {type(value).__name__}")
        try:
            return option.type_cast_value(ctx, value)
        except click.BadParameter as exc:
            raise ValueError(exc.message) from None

    return check


def endpoint_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--judge-url and its companions: judge through an OpenAI-compatible server. They reach
    the command as keyword arguments named as RunSettings' fields (`endpoint_settings`)."""
    opts = [
        click.option("--judge-url", metavar="URL",
                     help="Judge through an OpenAI-compatible server (vLLM, SGLang, llama.cpp, "
                          "Ollama) instead of loading a model, e.g. --judge-url "
                          "http://127.0.0.1:8000/v1. Overrides an endpoint profile's url. "
                          "user:password@ and ?api-key= parts are sent, and written only as "
                          "***."),
        click.option("--judge-api-key", metavar="KEY",
                     help="The server's API key (or NEXAGAUGE_JUDGE_API_KEY; not in a --config "
                          "file). Sent only to this server, never to a --model NODE=PROFILE "
                          "server (that gets its profile's api_key_env); never written."),
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
    """The --judge-* values given, as RunSettings' one `endpoint` keyword argument; unset
    ones are left out so NEXAGAUGE_JUDGE_* environment variables still apply."""
    given = {k[len(ENDPOINT_PREFIX):]: v for k, v in values.items()
             if k in ENDPOINT_FIELDS and v is not None}
    return {"endpoint": given} if given else {}


def target_server_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """--target-url and its companions: the model under test behind an OpenAI-compatible
    server, for `generate` and `attack`. One definition so both commands say the same."""
    opts = [
        click.option("--target-url", metavar="URL",
                     help="Answer with the model behind an OpenAI-compatible server (e.g. `vllm "
                          "serve`, with its own system prompt and guardrails) instead of "
                          "loading weights, e.g. --target-url http://127.0.0.1:8000/v1. --model "
                          "is then optional and names the served model id. user:password@ and "
                          "?api-key= parts are sent, and never written."),
        click.option("--target-api-key", metavar="KEY", envvar="NEXAGAUGE_TARGET_API_KEY",
                     help="The target server's API key (or NEXAGAUGE_TARGET_API_KEY). Sent "
                          "only to --target-url, never written."),
        click.option("--target-concurrency", type=click.IntRange(min=1), default=16,
                     show_default=True, metavar="N",
                     help="Requests to the target server in flight at once."),
    ]
    for opt in reversed(opts):
        fn = opt(fn)
    return fn

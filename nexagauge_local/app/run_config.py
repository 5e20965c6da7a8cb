"""A run configuration file (`--config run.toml`): run options and node blocks outside the data.

Why: rubrics, criteria and scoring knobs used to live only in each record, so applying a new
rubric to 100,000 records meant rewriting the dataset. A config names the run's options once
(`[run]`, with a judge per node in `[run.models]`) and gives node blocks (`[defaults.NODE]`)
to every record that lacks one; `override = true` makes a block replace the records' own.

Every problem is one line `FILE:LINE: key: message` (tomllib keeps no positions: toml_lines.py
finds them), all of them reported before any work, like a bad record. The text is kept whole
in the settings (settings.ConfigSource): the manifest records it and `reproduce` parses that
recorded text again, never the file, which may have moved or changed since.
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from nexagauge_local.app.errors import AppError
from nexagauge_local.app.toml_lines import KeyLines
from nexagauge_local.blocks import BlockDefaults, BlockModels
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import GRAPH
from nexagauge_local.records import format_validation
from nexagauge_local.redact import is_secret_param, redact_text
from nexagauge_local.settings import ConfigSource, RunSettings

# A [run] option's check: the option's value as the command would take it, ValueError if bad.
OptionCheck = Callable[[Any], Any]
OVERRIDE = "override"
MODELS = "models"
_TOML_POSITION = re.compile(r"\s*\(at (?:line (\d+), column \d+|end of document)\)$")


class RunConfigError(AppError):
    """The run configuration has problems, one `FILE:LINE: key: message` per detail; nothing
    was run."""

    def __init__(self, path: str, problems: list[str]) -> None:
        self.problems = problems
        super().__init__(f"{len(problems)} problem(s) in {path}; nothing was run.", problems)


class _Layout(BaseModel):
    """The file's two tables; anything else at the top level is a typo to report."""

    model_config = ConfigDict(extra="forbid")

    run: dict[str, Any] = {}
    defaults: dict[str, dict[str, Any]] = {}


@dataclass(frozen=True)
class RunConfig:
    source: ConfigSource
    # [run] option (its long name, underscores) -> the value the command takes
    options: dict[str, Any] = field(default_factory=dict)
    models: dict[str, str] = field(default_factory=dict)  # [run.models]: node -> judge profile
    defaults: BlockDefaults = field(default_factory=lambda: BlockDefaults({}))


def read_run_config(path: str | Path, options: Mapping[str, OptionCheck] | None = None,
                    blocks: BlockModels | None = None) -> RunConfig:
    """Read and check the file at `path`; raises RunConfigError listing every problem.
    `options`: the [run] options a command knows (long name with underscores -> its check);
    None skips [run]'s options (they were folded into the settings already)."""
    shown = str(path)
    try:
        data = Path(path).read_bytes()
    except OSError as exc:
        raise RunConfigError(shown, [f"{shown}: cannot read ({exc.strerror or exc})"]) from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        raise RunConfigError(shown, [f"{shown}:{line}: encoding: not UTF-8 text"]) from None
    source = ConfigSource(path=shown, sha256=hashlib.sha256(data).hexdigest(), text=text)
    config = parse_run_config(source, options, blocks)
    source.remember((GRAPH.blocks if blocks is None else blocks, config))
    return config


def parsed_config(source: ConfigSource, blocks: BlockModels | None = None) -> RunConfig:
    """The configuration `source` holds, parsed once: the parse the command line made of the
    file (read_run_config), else the first use's, kept on the source the settings carry. A
    library caller or `reproduce` (a recorded text, no file) parses here on first use."""
    blocks = GRAPH.blocks if blocks is None else blocks
    kept = source.remembered()
    if isinstance(kept, tuple) and kept[0] is blocks:
        return kept[1]  # type: ignore[no-any-return]
    config = parse_run_config(source, blocks=blocks)
    source.remember((blocks, config))
    return config


def parse_run_config(source: ConfigSource, options: Mapping[str, OptionCheck] | None = None,
                     blocks: BlockModels | None = None) -> RunConfig:
    """The configuration in `source.text` (see read_run_config)."""
    blocks = GRAPH.blocks if blocks is None else blocks
    shown = source.path
    try:
        raw = tomllib.loads(source.text)
    except tomllib.TOMLDecodeError as exc:
        raise RunConfigError(shown, [_syntax_problem(shown, source.text, exc)]) from None
    lines = KeyLines(source.text)
    found: list[tuple[int, str]] = []

    def problem(loc: tuple[str | int, ...], message: str) -> None:
        key = ".".join(str(p) for p in loc)
        line = lines.line_of(loc)
        found.append((line, f"{shown}:{line}: {key}: {message}"))

    try:
        layout = _Layout.model_validate(raw)
    except ValidationError as exc:
        for err in exc.errors():
            loc = err["loc"]
            problem(loc, "unknown table; a config has [run] and [defaults.NODE]"
                    if err["type"] == "extra_forbidden" else err["msg"])
        raise RunConfigError(shown, _in_file_order(found)) from None
    refused = _screen(raw, (), problem)

    def checked(loc: tuple[str | int, ...], message: str) -> None:
        # a refused value is reported once, as a credential: no other check may echo it
        if not any(tuple(map(str, loc[:len(r)])) == tuple(map(str, r)) for r in refused):
            problem(loc, message)

    run_options, models = _run_table(layout.run, options, checked)
    defaults = _defaults(layout.defaults, blocks, checked)
    if found:
        raise RunConfigError(shown, _in_file_order(found))
    return RunConfig(source, run_options, models, defaults)


def _in_file_order(found: list[tuple[int, str]]) -> list[str]:
    return [message for _, message in sorted(found, key=lambda f: f[0])]


Problem = Callable[[tuple[str | int, ...], str], None]


def _run_table(table: Mapping[str, Any], options: Mapping[str, OptionCheck] | None,
               problem: Problem) -> tuple[dict[str, Any], dict[str, str]]:
    """[run]'s options (checked by `options`) and its [run.models] table."""
    out: dict[str, Any] = {}
    models: dict[str, str] = {}
    judged = GRAPH.judged_nodes
    for key, value in table.items():
        if key == MODELS:
            if not isinstance(value, dict):
                problem(("run", key), "must be a table of NODE = \"PROFILE\"")
                continue
            for node, profile in value.items():
                if node not in judged:
                    problem(("run", key, node), f"not a judge node; choose one of: "
                                                f"{', '.join(judged)}")
                elif not isinstance(profile, str) or not profile.strip():
                    problem(("run", key, node), "must be a judge profile name or a path")
                else:
                    models[node] = profile
            continue
        name = key.replace("-", "_")
        if options is None:
            continue
        if name not in options:
            known = ", ".join(sorted(k.replace("_", "-") for k in options))
            problem(("run", key), f"unknown option; [run] takes `run`'s options: {known}")
            continue
        try:
            out[name] = options[name](value)
        except ValueError as exc:
            problem(("run", key), str(exc))
    return out, models


KEPT = "(the manifest records the file's text)"
JUDGE_KEY = (f"an API key is not kept in a run configuration {KEPT}; set "
             "NEXAGAUGE_JUDGE_API_KEY, or give a judge profile an api_key_env")
SECRET_KEY = (f"a value named like a credential is not kept in a run configuration {KEPT}; "
              "give it from the environment or the command line")
JUDGE_URL = (f"a URL with a password or a secret parameter is not kept in a run configuration "
             f"{KEPT}; give the URL without them and the key in NEXAGAUGE_JUDGE_API_KEY, or "
             "the whole URL in NEXAGAUGE_JUDGE_URL")
SECRET_URL = (f"a URL with a password or a secret parameter (or an Authorization header) is "
              f"not kept in a run configuration {KEPT}; give it without them, the credentials "
              "from the environment or the command line")


def _credential(key: str, value: Any) -> str | None:
    """Why `key = value`, anywhere in the file, is refused as a credential, else None. The
    manifest records the file's text whole (and its hash), so a key or a password written here
    would be in every run's manifest: the file names servers, the environment holds their
    keys. Refused rather than redacted, so the recorded text stays the file's bytes and
    `verify --config` / `reproduce` work on it unchanged. A credential is what redact.py
    calls one: a key named like a secret parameter (`judge-api-key`, `token`, `*_password`)
    holding a text, or a text holding a URL with a userinfo or a secret parameter (any
    option: `judge-url`, `cluster`, a rubric's text)."""
    name = key.replace("-", "_")
    if name == "judge_api_key":
        return JUDGE_KEY
    if not isinstance(value, str):
        return None
    if value.strip() and is_secret_param(name):
        return SECRET_KEY
    if redact_text(value) != value:
        return JUDGE_URL if name == "judge_url" else SECRET_URL
    return None


def _screen(table: Mapping[str, Any], loc: tuple[str | int, ...],
            problem: Problem) -> set[tuple[str | int, ...]]:
    """Every key of the file, at any depth (arrays of tables and inline tables included),
    through _credential; returns where one was refused."""
    refused: set[tuple[str | int, ...]] = set()
    for key, value in table.items():
        here = (*loc, key)
        items = list(enumerate(value)) if isinstance(value, list) else [(None, value)]
        for index, item in items:
            at = here if index is None else (*here, index)
            if isinstance(item, Mapping):
                refused |= _screen(item, at, problem)
                continue
            why = _credential(key, item)
            if why is not None:
                problem(here, why)
                refused.add(here)
                break
    return refused


def _defaults(tables: Mapping[str, dict[str, Any]], blocks: BlockModels,
              problem: Problem) -> BlockDefaults:
    """[defaults.NODE] tables, each validated by its node's own block model."""
    found: dict[str, BaseModel] = {}
    override: set[str] = set()
    for name, table in tables.items():
        if name not in blocks:
            problem(("defaults", name), f"unknown block; choose one of: {', '.join(blocks)}")
            continue
        table = dict(table)
        flag = table.pop(OVERRIDE, False)
        if not isinstance(flag, bool):
            problem(("defaults", name, OVERRIDE), f"must be true or false, got {flag!r}")
        elif flag:
            override.add(name)
        try:
            found[name] = blocks[name].model_validate(table)
        except ValidationError as exc:
            for loc, message in format_validation(name, exc):
                problem(("defaults", *loc.split(".")), message)
    return BlockDefaults(found, frozenset(override))


def _syntax_problem(shown: str, text: str, exc: tomllib.TOMLDecodeError) -> str:
    """tomllib's message as `FILE:LINE: syntax: what` (Python 3.11 puts the position in the
    message's tail; later versions also give it as attributes)."""
    message = str(exc)
    m = _TOML_POSITION.search(message)
    line = getattr(exc, "lineno", None)
    if line is None and m is not None:
        line = int(m.group(1)) if m.group(1) else max(1, len(text.splitlines()))
    what = _TOML_POSITION.sub("", getattr(exc, "msg", None) or message)
    return f"{shown}:{line or 1}: syntax: {what}"


def with_config(dataset: Dataset, settings: RunSettings) -> Dataset:
    """The dataset with the run configuration's [defaults] blocks applied to its records (the
    settings' configuration as parsed once: a library caller or `reproduce` needs no file)."""
    if settings.config is None:
        return dataset
    return replace(dataset, defaults=parsed_config(settings.config, dataset.blocks).defaults)


def effective_blocks(settings: RunSettings) -> dict[str, dict[str, Any]]:
    """The configuration's default blocks as JSON, `override` marked (for `nodes`)."""
    if settings.config is None:
        return {}
    defaults = parsed_config(settings.config).defaults
    return {name: {**block.model_dump(mode="json"), OVERRIDE: name in defaults.override}
            for name, block in defaults.blocks.items()}

"""The audit trail of a run: the facts the manifest records, collected where the run has them.

Why here (the app layer): the facts live in several layers at once. The judge's identity comes
from the BackendFactory (app/judge.py), the output schemas from the requests the nodes actually
sent (seen by wrapping the judge), the prompt templates from the node packages, the case ids
from the dataset's scan. `audit/` only hashes and writes; this module knows where to look.

Order at the end of a run (the manifest hashes every other file, the signature covers the
manifest): case reports, metrics, summary (runner) -> report.html with the provenance panel ->
manifest.json -> manifest.json.sig.
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from nexagauge_local.app.errors import InputError
from nexagauge_local.app.judge import ResolvedJudges
from nexagauge_local.audit import (
    HashMemo,
    InputFacts,
    JudgeFacts,
    RunRecord,
    finalize_run,
    hash_input,
    hash_rows,
    hash_tokenizer,
    hash_weights,
    judge_facts,
    prompt_entry,
    provenance_panel,
    schema_entry,
    tokenizer_files_in,
)
from nexagauge_local.audit.manifest import NOT_OUTPUTS, PromptEntry, SchemaEntry
from nexagauge_local.audit.signing import SigningError, key_fingerprint, load_private_key
from nexagauge_local.case import Case
from nexagauge_local.dataset import Dataset, Duplicate
from nexagauge_local.events import Notices
from nexagauge_local.judge import (
    BackendFactory,
    Judge,
    JudgeRequest,
    TappedJudge,
    schema_id,
)
from nexagauge_local.redact import redact_argv, redact_settings, redact_url
from nexagauge_local.report.charts_ahead import ChartsAhead, charts_ahead
from nexagauge_local.report.files import write_json
from nexagauge_local.report.html import chart_memo_dir, draw_charts_job, write_report_or_warn
from nexagauge_local.report.run_summary import RunSummary
from nexagauge_local.runner import RunOutcome
from nexagauge_local.settings import RunSettings

redact_secrets = redact_argv  # the name callers of this module know

PKG_ROOT = Path(__file__).resolve().parents[1]
NODES_PKG = "nexagauge_local.nodes"
# The shared prompt toolkit (system text, fences, section layout): every node's prompt is made
# with it, so a change there changes every template hash.
SHARED_PROMPT_DIR = PKG_ROOT / "judge" / "prompts"


class SignKeyError(InputError):
    """`--sign KEYFILE` names no usable Ed25519 private key: a set-up error, found before work."""


# ------------------------------------------------------------------ schemas actually used


@dataclass
class SchemaLog:
    """(node, schema id) -> JSON schema of every output schema a request carried."""

    seen: dict[tuple[str, str], dict[str, Any]] = field(default_factory=dict)

    def add(self, node: str, schema: type[BaseModel]) -> None:
        key = (node, f"{schema.__name__}/{schema_id(schema)}")
        if key not in self.seen:
            self.seen[key] = schema.model_json_schema()

    def entries(self) -> list[SchemaEntry]:
        return [schema_entry(n, sid, js) for (n, sid), js in sorted(self.seen.items())]


# ------------------------------------------------------------------ prompt templates


def _package_prompt(module_name: str) -> Path | None:
    """nodes/<pkg>/prompt.py of the node package a module belongs to, if it has one."""
    parts = module_name.split(".")
    if len(parts) < 3 or ".".join(parts[:2]) != NODES_PKG:
        return None
    candidate = PKG_ROOT / "nodes" / parts[2] / "prompt.py"
    return candidate if candidate.is_file() else None


def prompt_sources(node: str) -> list[Path]:
    """The source files a node's prompts are made from.

    The node's own module (it may hold its wording, as grounding and relevance do), the
    prompt.py of its package and of every node package whose names it uses (grounding renders
    with claim_check's), and the shared prompt toolkit.
    """
    mod: ModuleType = importlib.import_module(f"{NODES_PKG}.{node}")
    files: set[Path] = {Path(str(mod.__file__)).resolve()}
    own = _package_prompt(mod.__name__)
    if own:
        files.add(own.resolve())
    for value in vars(mod).values():
        used = inspect.getmodule(value)
        found = _package_prompt(used.__name__) if used is not None else None
        if found:
            files.add(found.resolve())
    files.update(p.resolve() for p in SHARED_PROMPT_DIR.glob("*.py"))
    return sorted(files)


def template_text(node: str) -> str:
    """The prompt template of a node, as text: its source files, each under its package path
    (so the hash names the code that renders the prompt, not any one case's rendering)."""
    return "".join(
        f"# {p.relative_to(PKG_ROOT.parent).as_posix()}\n{p.read_text(encoding='utf-8')}\n"
        for p in prompt_sources(node)
    )


def prompt_entries(versions: Mapping[str, str]) -> list[PromptEntry]:
    """One entry per LLM node that sent requests (summary.json's prompt_versions)."""
    return [prompt_entry(node, version, template_text(node)) for node, version in versions.items()]


# ------------------------------------------------------------------ judge, input, key


def chat_template_of(weights: Path) -> str | None:
    """The chat template as the tokenizer files carry it (chat_template.jinja, else
    tokenizer_config.json's chat_template); None for a GGUF file (the template sits in its
    metadata, which the weights hash already covers)."""
    if not weights.is_dir():
        return None
    jinja = weights / "chat_template.jinja"
    if jinja.is_file():
        return jinja.read_text(encoding="utf-8")
    config = weights / "tokenizer_config.json"
    try:
        value = json.loads(config.read_text(encoding="utf-8")).get("chat_template")
    except (OSError, ValueError, AttributeError):
        return None
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True) if value else None


def collect_judge(factory: BackendFactory, memo: HashMemo | None) -> JudgeFacts:
    """The manifest's facts of one judge: what its decision says ran (backend, grammar
    engine, dtype, devices, why), and the hashes of the weights and tokenizer it loads."""
    decision = factory.decision
    tok = tmpl = None
    weights_path: str | Path
    if factory.endpoint is not None:  # a judge server: its model id and stated revision are
        weights_path = f"{redact_url(factory.endpoint.url)} ({factory.endpoint.model})"  # all
        weights = []  # this host knows of its weights (no credential here)
    else:
        weights_path = factory.profile.weights_path()
        tok, tmpl = hash_tokenizer(tokenizer_files_in(weights_path),
                                   chat_template_of(weights_path), memo)
        weights = hash_weights(weights_path, memo)
    return judge_facts(decision, weights_path=weights_path, weights=weights,
                       tokenizer_sha256=tok, chat_template_sha256=tmpl)


# The manifest's judges: the default's facts, and node -> facts for nodes judged by another
RunJudges = tuple[JudgeFacts | None, dict[str, JudgeFacts]]


def collect_judges(settings: RunSettings, summary: RunSummary,
                   judges: ResolvedJudges) -> RunJudges:
    """The facts of every judge that answered (backend or cache), as summary.json names them:
    its `judge` block's profile (the default's), and each node of `node_judges` judged by
    another profile, each from the decision the run made for that profile (`judges`, the
    run's preflight_judges), never decided again. Each profile is hashed once (and memoised
    across runs)."""
    block = summary.judge
    if block is None:
        return None, {}
    memo = HashMemo(settings.cache_dir / "audit")
    facts: dict[str, JudgeFacts] = {}

    def of(profile: str) -> JudgeFacts:
        if profile not in facts:
            facts[profile] = collect_judge(judges[profile], memo)
        return facts[profile]

    main = block.profile or settings.model
    nodes = {node: j.profile or main for node, j in summary.node_judges.items()}
    return of(main), {node: of(p) for node, p in nodes.items() if p != main}


def collect_input(dataset: Dataset, into: Path) -> InputFacts:
    """The input with the case id the run gave each record, by source position; the records'
    digests stream into ``into`` (one pass over the dataset, nothing per record kept). Records
    in memory are hashed as they were read; a pipe's or stdin's as the bytes that came."""

    def run_ids() -> Iterator[tuple[int, str]]:
        for item in dataset.items():
            src = item.source if isinstance(item, Case | Duplicate) else None
            pos = None if src is None else (src.line if src.line is not None else src.index)
            if pos is not None:
                yield pos, item.case_id  # type: ignore[union-attr]

    display = dataset.display or str(dataset.path.resolve())
    if dataset.rows is not None:
        return hash_rows(dataset.rows, into=into, display=display, case_ids=run_ids())
    return hash_input(dataset.path, into=into, case_ids=run_ids(), fmt=dataset.fmt,
                      display=display, origin="stream" if dataset.origin == "stream" else None)


def check_sign_key(path: str | os.PathLike[str]) -> str:
    """The key's fingerprint, or SignKeyError before any work is done."""
    try:
        return key_fingerprint(load_private_key(path))
    except FileNotFoundError:
        raise SignKeyError(f"--sign {path}: no such key file") from None
    except SigningError as exc:
        raise SignKeyError(f"--sign {exc}") from None


# ------------------------------------------------------------------ the trail of one run


@dataclass
class AuditTrail:
    """What `app.run.run` holds for the audit: started at, argv, the signing key, the schema
    log. Inactive (every method a no-op) when the run has no output folder."""

    settings: RunSettings
    argv: list[str]
    sign_key: Path | None = None
    key_fp: str | None = None
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    schemas: SchemaLog = field(default_factory=SchemaLog)

    @classmethod
    def start(
        cls,
        settings: RunSettings,
        argv: Sequence[str] | None = None,
        sign_key: str | os.PathLike[str] | None = None,
    ) -> AuditTrail:
        fp = check_sign_key(sign_key) if sign_key is not None else None
        return cls(
            settings,
            redact_secrets(sys.argv if argv is None else argv),
            Path(sign_key) if sign_key is not None else None,
            fp,
        )

    @property
    def active(self) -> bool:
        return self.settings.output_dir is not None

    def wrap(self, factory: Callable[[], Judge]) -> Callable[[], Judge]:
        """The runner's judge factory, with every request's schema noted."""
        def note(node: str, requests: Sequence[JudgeRequest]) -> None:
            for r in requests:
                self.schemas.add(r.node or node, r.schema)

        return lambda: TappedJudge(factory(), note)

    def finish(self, dataset: Dataset, outcome: RunOutcome, notices: Notices,
               into: Path | None = None, judges: ResolvedJudges | None = None) -> Path | None:
        """report.html with the provenance panel, then manifest.json (and its signature).
        `into`: where the files are written when that is not yet the output folder the
        manifest records (a run's staging folder). `notices` hears a report.html that failed.
        `judges`: the run's judges as decided (profile -> factory), which the manifest
        records."""
        out = into or self.settings.output_dir
        if out is None or self.settings.output_dir is None:
            return None
        for stale in NOT_OUTPUTS:  # a previous run's manifest, sidecars, signature
            (out / stale).unlink(missing_ok=True)
        memo_dir = self.settings.memo_dir("report")
        # report.html's charts are drawn on the idle core while the facts below are gathered
        with charts_ahead(draw_charts_job(out, outcome.digest), chart_memo_dir(memo_dir)) as ahead:
            inp, (judge, node_judges), prompts, schemas = self._report(
                dataset, outcome, notices, out, memo_dir, ahead, judges or {})
        settings = redact_settings(self.settings.model_dump(mode="json"))
        settings["field_map"] = dict(dataset.field_map)  # the CLI gives --field to the dataset
        run = RunRecord(started_at=self.started, argv=self.argv, settings=settings, input=inp,
                        judge=judge, node_judges=node_judges, prompts=prompts, schemas=schemas)
        _, path, _ = finalize_run(out, run, sign_key=self.sign_key)
        return path

    def _report(self, dataset: Dataset, outcome: RunOutcome, notices: Notices, out: Path,
                memo_dir: Path | None, ahead: ChartsAhead | None,
                judges: ResolvedJudges) -> tuple[
                    InputFacts, RunJudges, list[PromptEntry], list[SchemaEntry]]:
        """The manifest's facts (input, judges, prompts, schemas), then report.html with them
        in its provenance panel."""
        summary = outcome.run_summary
        judge, node_judges = collect_judges(self.settings, summary, judges)
        prompts = prompt_entries(summary.prompt_versions or {})
        if prompts:  # summary.json names the exact templates too, not only their versions
            summary.prompt_templates = {p.node: p.template_sha256 for p in prompts}
            write_json(out / "summary.json", summary.to_dict())
        schemas = self.schemas.entries()
        inp = collect_input(dataset, out)
        panel = provenance_panel(
            judge=judge,
            node_judges=node_judges,
            prompts=prompts,
            schemas=schemas,
            input=inp,
            signature="signed, not checked" if self.sign_key else "unsigned",
            key_fingerprint=self.key_fp,
        )
        write_report_or_warn(out, notices, provenance=panel, shown_as=self.settings.output_dir,
                             memo_dir=memo_dir, digest=outcome.digest, ahead=ahead)
        return inp, (judge, node_judges), prompts, schemas

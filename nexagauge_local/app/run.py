"""The `run` service: pre-flight the judge, open the input, walk the graph, close the judge.

The CLI and the library API (`evaluate`) both come through here, so they resolve the judge,
check the cluster and clean up engines the same way.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path

from nexagauge_local.app.cache import cache_errors, check_caches
from nexagauge_local.app.judge import (
    JudgeClients,
    ResolvedJudges,
    check_gpus,
    check_node_models,
    judge_start_errors,
    own_models,
    preflight_judges,
)
from nexagauge_local.app.judge_notes import dtype_note
from nexagauge_local.app.output_folder import OutputFolder
from nexagauge_local.app.run_config import with_config
from nexagauge_local.app.run_facts import AuditTrail
from nexagauge_local.dataset import Dataset
from nexagauge_local.events import LogEvents, RunEvents
from nexagauge_local.graph import METRIC_NODES, judged_nodes, plan, predicted_eligibility
from nexagauge_local.judge import AUTO_COUNT_CAP, JUDGEMENTS_PER_UNIT, cpu_auto_open
from nexagauge_local.nodes.base import NodeJudge
from nexagauge_local.report.run_summary import JudgeOutcome, RunSummary
from nexagauge_local.runner import Runner, RunOutcome
from nexagauge_local.settings import RunSettings

EMBEDDING_NODES = frozenset({"refiner", "refalign"})  # the nodes that call their embedder
# Opens the run's dataset; gets a private temporary folder (for spooling stdin and pipes).
OpenInput = Callable[[Path], Dataset]


@dataclass(frozen=True)
class MetricLine:
    """One metric node's headline numbers, as `run` reports them."""

    name: str
    scored: int
    avg_score: float | None
    pass_rate: float | None


@dataclass(frozen=True)
class RunResult:
    outcome: RunOutcome
    metrics: list[MetricLine] = field(default_factory=list)
    notice: str | None = None  # e.g. the demo judge's warning

    @property
    def summary(self) -> RunSummary:
        return self.outcome.run_summary

    @property
    def cases(self) -> dict[str, int | None]:
        """summary.json's case counts as its JSON object (callers that index it)."""
        return self.summary.cases.model_dump()

    @property
    def judge_outcomes(self) -> dict[str, JudgeOutcome]:
        """node -> how its requests ended, for every node that asked the judge."""
        return self.summary.judge_outcomes

    @property
    def judge_reused(self) -> dict[str, int]:
        """Judgements this run took from the cache (a resumed run's saved work), computed, and
        of those computed how many had a failed answer cached (asked again)."""
        nodes = self.summary.nodes.values()
        return {"reused": sum(u.cache_hits or 0 for u in nodes),
                "computed": sum(u.backend_requests or 0 for u in nodes),
                "retried": sum(u.cache_retried or 0 for u in nodes)}

    @property
    def judge_failed_everywhere(self) -> list[str]:
        """Nodes whose judge failed on every request: their metrics are all errors, so the
        run must not look like a success (exit 3)."""
        return [n for n, o in self.judge_outcomes.items() if o.all_failed]


def needs_judge(target: str, dataset: Dataset | None = None) -> bool:
    """Whether the run needs a judge: its plan has an LLM node and, given the dataset, at least
    one case would enter one. A refalign run whose records never set atomic_chunks needs none,
    so it runs (and is pre-flighted) like the deterministic node it is for those records."""
    specs = [s for s in plan(target) if s.per_case]
    if dataset is None:
        return bool(judged_nodes(specs))
    return judge_units(target, dataset, stop_at=1) > 0


def embeds(target: str) -> bool:
    """Whether the run's plan has a node that embeds text (refiner, refalign: nodes/)."""
    return any(s.name in EMBEDDING_NODES for s in plan(target))


def judge_units(target: str, dataset: Dataset, stop_at: int | None = None) -> int:
    """How many (case, LLM node) pairs the run will judge, counting no further than `stop_at`
    (a cap keeps a million-record count cheap where only "enough" matters)."""
    specs = [s for s in plan(target) if s.per_case]
    llm = judged_nodes(specs)
    units = 0
    if not llm:
        return 0
    for case in dataset.cases():
        reasons = predicted_eligibility(case, specs)
        units += sum(reasons[name] is None for name in llm)
        if stop_at is not None and units >= stop_at:
            return units
    return units


def predict_judgements(settings: RunSettings, dataset: Dataset) -> RunSettings:
    """`--backend auto` without a GPU weighs the run's workload (judge/cpu_auto.py): the
    settings with the predicted judge requests, counted only where that choice is open."""
    if settings.cluster or not cpu_auto_open(settings.backend):
        return settings
    units = judge_units(settings.target, dataset, stop_at=AUTO_COUNT_CAP)
    return settings.model_copy(update={"predicted_judgements": units * JUDGEMENTS_PER_UNIT})


def run(
    settings: RunSettings,
    open_input: OpenInput,
    *,
    events: RunEvents | None = None,
    keep_reports: bool = False,
    argv: Sequence[str] | None = None,
    sign_key: str | os.PathLike[str] | None = None,
) -> RunResult:
    """Run `settings.target` over the dataset `open_input` gives.

    Raises JudgeSetupError / ClusterSetupError / CacheError (a damaged cache) before any
    work, CacheError when a cache refuses a write part-way, InputError when the input
    cannot be opened, RecordsError when a record is bad and on_error is "fail".
    With an output folder the run ends with manifest.json (app/run_facts.py), signed with
    `sign_key` when given; `argv` (default sys.argv) is recorded in it. `events` hears
    skipped records, progress and warnings (default: LogEvents, for library callers)."""
    events = events if events is not None else LogEvents()
    check_node_models(settings.node_models)
    check_gpus(settings)
    with tempfile.TemporaryDirectory() as tmp:
        dataset = with_config(open_input(Path(tmp)), settings)
        judged = needs_judge(settings.target, dataset)
        if settings.use_cache:
            check_caches(settings.cache_dir, judge=judged, embeddings=embeds(settings.target))
        planned = [s.name for s in plan(settings.target) if s.per_case]
        unplanned = [f"{n}={p}" for n, p in settings.node_models.items() if n not in planned]
        if unplanned:  # e.g. a shared run configuration naming every node's judge
            events.note(f"{settings.target} does not run {', '.join(unplanned)}: "
                        "those judges are not used")
        factories: ResolvedJudges = {}  # profile -> its judge, decided once for the run
        if judged:
            settings = predict_judgements(settings, dataset)
            factories = preflight_judges(settings, planned)
            if settings.use_cache:
                for notice in dict.fromkeys(f.endpoint.reuse_notice() for f in
                                            factories.values() if f.endpoint is not None):
                    if notice:
                        events.warning(notice)
            for note in dict.fromkeys(n for f in factories.values() for n in f.decision.notes):
                events.note(note)  # e.g. the hf engine uses one of the GPUs --gpu named
            if settings.progress:
                own = own_models(settings, planned)
                for profile, factory in factories.items():
                    nodes = [n for n, p in own.items() if p == profile]
                    which = f"judge for {', '.join(nodes)}" if nodes else "judge"
                    decision = factory.decision
                    events.info(f"{which}: {decision.profile} on the {decision.backend} "
                                f"backend ({decision.reason})")
                    said = dtype_note(decision.profile, factory.profile.dtype, decision.dtype,
                                      decision.device)
                    if said:
                        events.note(said)
        trail = AuditTrail.start(settings, argv, sign_key)  # checks a --sign key first
        with _staged(settings, keep=(*dataset.reads, settings.cache_dir)) as (staged, folder):
            with JudgeClients(settings, factories) as clients:
                runner = Runner(
                    staged,
                    events=events,
                    judge_factory=trail.wrap(clients) if judged else None,
                    node_judges={node: NodeJudge(profile, trail.wrap(clients.opener(profile)))
                                 for node, profile in own_models(settings, planned).items()}
                    if judged else None,
                    keep_reports=keep_reports,
                    render_report=not trail.active,
                )
                with cache_errors(), judge_start_errors():
                    outcome = runner.run(dataset)
            # the judges as the clients were built (the pre-flighted ones): what the manifest names
            trail.finish(dataset, outcome, events, into=staged.output_dir,
                         judges=clients.resolved)
            if folder is not None:
                folder.commit()
                outcome = replace(outcome, output_dir=folder.final)
    return RunResult(
        outcome=outcome,
        metrics=[
            MetricLine(name, summ.scored, summ.avg_score, summ.pass_rate)
            for name, summ in outcome.node_summaries.items()
            if name in METRIC_NODES
        ],
        notice=outcome.run_summary.judge.notice if outcome.run_summary.judge else None,
    )


@contextmanager
def _staged(settings: RunSettings, keep: Sequence[Path]) -> Iterator[
        tuple[RunSettings, OutputFolder | None]]:
    """The settings the run writes with (its output folder's staging folder in place of the
    folder) and the folder's claim (app/output_folder.py); a write that fails there for want
    of disk becomes one line naming the folder."""
    if settings.output_dir is None:
        yield settings, None
        return
    with OutputFolder.open(settings.output_dir, overwrite=settings.overwrite, keep=keep) as folder:
        try:
            yield settings.model_copy(update={"output_dir": folder.staging}), folder
        except OSError as exc:
            failure = folder.write_failure(exc)
            if failure is None:
                raise
            raise failure from None

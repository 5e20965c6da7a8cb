"""What every node sees: the cases of one shard and a run context; what every node provides.

Nodes are node-major: `run` receives every eligible case of the shard at once, so an LLM node can
build all its prompts and make one backend call, and an embedding node one encode call.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from nexagauge_local.case import Case
from nexagauge_local.judge import FailureKind, JudgeResult
from nexagauge_local.settings import RunSettings

if TYPE_CHECKING:
    from nexagauge_local.embed import Embedder
    from nexagauge_local.judge import Judge


@dataclass
class CaseState:
    """One case's journey through the plan: what each node produced, and why any was skipped."""

    case: Case
    artifacts: dict[str, Any] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)

    def ran(self, node: str) -> bool:
        return node in self.artifacts


@dataclass
class JudgeOutcome:
    """How one node's judge requests ended in a run: answered, or failed (with the first
    error seen), counted over every shard."""

    requests: int = 0
    failed: int = 0
    first_error: str | None = None
    over_context: int = 0  # failed because prompt + max_tokens exceeds the judge's window
    truncated: int = 0  # judged with the middle of a long text cut (--long-inputs)

    def add(self, results: Sequence[JudgeResult], truncated: int = 0) -> None:
        self.requests += len(results)
        self.truncated += truncated
        for res in results:
            if res.failure is not None:
                self.failed += 1
                self.over_context += res.failure is FailureKind.CONTEXT_WINDOW
                if self.first_error is None:
                    self.first_error = res.error

    @property
    def all_failed(self) -> bool:
        return self.requests > 0 and self.failed == self.requests

    def as_dict(self) -> dict[str, object]:
        out: dict[str, object] = {"requests": self.requests, "failed": self.failed,
                                  "first_error": self.first_error}
        if self.over_context:
            out["over_context"] = self.over_context
        if self.truncated:
            out["truncated"] = self.truncated
        return out


@dataclass(frozen=True)
class JudgeBatch:
    """What one node's batched judge call returned: the results (aligned with its requests)
    and the bookkeeping the run keeps about them.

    Returned rather than written into the RunContext by the helper that asks, so the one
    place that records it (`RunContext.record_judged`) is visible in the node framework.
    """

    results: list[JudgeResult]
    # the distinct prompt versions the requests carried, sorted and joined ("" when none)
    prompt_version: str = ""
    # (case id, what --long-inputs cut) per truncated request, in request order
    truncated: list[tuple[str, dict[str, Any]]] = field(default_factory=list)


# The key of the run's default judge: the one every LLM node without a judge of its own asks.
DEFAULT_JUDGE = ""


@dataclass(frozen=True)
class NodeJudge:
    """The judge an LLM node asks instead of the run's default (`--model NODE=PROFILE`).

    Nodes whose NodeJudge has the same `key` share one judge (one client, one engine);
    `factory` opens it, on the node's first request."""

    key: str
    factory: Callable[[], Judge]


@dataclass
class RunContext:
    """Shared, lazily built resources for one run. Nothing here is global: tests build their own."""

    settings: RunSettings
    embedder_factory: Callable[[], Embedder]
    judge_factory: Callable[[], Judge] | None = None
    advance: Callable[[str, int], None] = lambda node, n: None
    # The metric nodes of this run's plan, in plan order: what an aggregate node (eval) reads,
    # given by the runner so the aggregate never looks the graph up by name.
    metric_nodes: tuple[str, ...] = ()
    # node -> the prompt version its judge requests carried (part of the cache key); recorded
    # in summary.json so `compare` can say when two runs used different prompts.
    prompt_versions: dict[str, str] = field(default_factory=dict)
    # node -> how its judge requests ended; summary.json's `judge_outcomes`, and the CLI's exit
    # 3 when a node's judge failed on every request.
    judge_outcomes: dict[str, JudgeOutcome] = field(default_factory=dict)
    # case id -> what --long-inputs truncate-middle cut for it (node, metric, field, sizes);
    # the runner moves each case's list into its case report as `input_truncated`.
    truncated_inputs: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    # Set by the runner while the plan's last node runs: that node may call it with each case
    # whose artifacts are final, and the runner writes the case's report there and then, while
    # the node works on the rest (refmatch: while its pool scores). Calling it is optional.
    case_done: Callable[[CaseState], None] = lambda state: None
    # LLM nodes judged by another judge than `judge_factory`'s (node -> its judge)
    node_judges: Mapping[str, NodeJudge] = field(default_factory=dict)
    _embedder: Embedder | None = None
    # judge key -> the open judge; key -> every judge opened under it, closed ones too (their
    # ledgers and descriptions go into summary.json)
    _open: dict[str, Judge] = field(default_factory=dict)
    _opened: dict[str, list[Judge]] = field(default_factory=dict)

    def record_judged(self, node: str, batch: JudgeBatch) -> None:
        """Record one node's judge call: its prompt version, each truncated input of a case,
        and how its requests ended. The only writer of those three fields."""
        if not batch.results:
            return
        if batch.prompt_version:
            self.prompt_versions[node] = batch.prompt_version
        for case_id, cut in batch.truncated:
            self.truncated_inputs.setdefault(case_id, []).append(cut)
        self.judge_outcomes.setdefault(node, JudgeOutcome()).add(batch.results,
                                                                 len(batch.truncated))

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            self._embedder = self.embedder_factory()
        return self._embedder

    @property
    def embedder_started(self) -> bool:
        """Whether a node asked for the embedder (so there is a model to describe or free)."""
        return self._embedder is not None

    def judge_key(self, node: str) -> str:
        """Which judge `node` asks: its own judge's key, or DEFAULT_JUDGE."""
        own = self.node_judges.get(node)
        return DEFAULT_JUDGE if own is None else own.key

    def has_judge(self, node: str) -> bool:
        return node in self.node_judges or self.judge_factory is not None

    def judge_format(self, node: str) -> str:
        """How `node`'s judge is asked (its profile's judge_format); a node without a judge
        plans in the rubric format (every request then fails with "no judge")."""
        return self.judge_for(node).judge_format if self.has_judge(node) else "rubric_json"

    def pass_thresholds(self, node: str) -> dict[str, float]:
        """Per-metric pass thresholds for `node`: its judge profile's, then the run's
        (--threshold) over them; a metric named in neither keeps 0.6."""
        fitted = dict(self.judge_for(node).thresholds) if self.has_judge(node) else {}
        return {**fitted, **self.settings.thresholds}

    def judge_for(self, node: str) -> Judge:
        """`node`'s judge, opened on first use; nodes that share a key share the judge."""
        key = self.judge_key(node)
        if key not in self._open:
            own = self.node_judges.get(node)
            factory = own.factory if own is not None else self.judge_factory
            if factory is None:
                raise RuntimeError("this run has no judge configured")
            self._open[key] = factory()
            self._opened.setdefault(key, []).append(self._open[key])
        return self._open[key]

    def close_judge(self, key: str) -> None:
        """Close the judge under `key` (its engine's memory is freed) when no later node needs
        it; a node that asks again opens a new one. Its ledger stays for the summary."""
        judge = self._open.pop(key, None)
        if judge is not None:
            judge.close()

    @property
    def judge(self) -> Judge:
        """The run's default judge (what a node without a judge of its own asks)."""
        return self.judge_for(DEFAULT_JUDGE)

    @property
    def judge_started(self) -> bool:
        """Whether any node asked any judge."""
        return bool(self._opened)

    def judges_used(self) -> dict[str, list[Judge]]:
        """key -> every judge opened under it, in opening order (DEFAULT_JUDGE for the
        default's)."""
        return {k: list(v) for k, v in self._opened.items()}


class Node(Protocol):
    name: str

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        """Write this node's output to `state.artifacts[self.name]` for each case it handled."""
        ...

    def finalize(self) -> dict[str, Any]:
        """Called once after the last shard; the keys are merged into `metrics/<node>.json`
        (run-level aggregates over every shard). {} when the node has none."""
        ...

    def close(self) -> None:
        """Release what the node holds (worker pools). Called once the run ends, also when
        it stops early: a pool left to the interpreter's exit dies with a traceback."""
        ...


class NodeBase:
    """Default `finalize` for nodes without run-level aggregates, so the runner calls it on
    every node without asking whether it exists."""

    name: str

    def finalize(self) -> dict[str, Any]:
        return {}

    def close(self) -> None:
        return None

"""The LLM-node contract: a node says what to ask about one case and how to score the answers;
the framework owns everything between (modelled on inspect_ai's scorer contract).

Why: six nodes and the toy node each repeated one ritual (build every case's requests, make a
progress bar, one judge call, slice the flat results back per case, write each case's section,
top the bar up) and each could get it subtly wrong: a slice off by one scores a case with its
neighbour's answers. Here it is written once:

- `plan_case(state, ctx)` -> the case's `Ask`s (a request plus what scoring its answer needs),
  or None when the case gets no section (it declined, e.g. said why in `state.skipped`);
- `score_case(state, answers)` -> the case's artifact (usually a NodeReport) from its answers,
  each paired with its Ask's `about`, and the cost of exactly those requests.

The framework (`LLMNode.run`) makes ONE judge call per node and shard with every case's requests
in case order (batching is a product property, and the judge cache keys and batches depend on
that order), records the call's bookkeeping in the RunContext (`record_judged`), turns request
progress into whole cases on the node's bar, and reports a failing or missing judge as failed
results the node scores like any other. Run-level accumulators live on the node (the runner keeps
one instance for every shard): `score_case` adds to them, `finalize` reports them, and
`start_shard(ctx)` reads run settings before a shard is planned.

A node whose requests are not per case overrides `plan_shard` instead (geval_steps: one request
per distinct criteria, shared by every case that uses it); the judge call, bookkeeping and
progress stay the framework's.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from nexagauge_local.judge import JudgeRequest, JudgeResult
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.judging import CaseProgress, ask_judge, case_cost
from nexagauge_local.results import NodeCost

P = TypeVar("P")  # what scoring one answer needs (a metric, a sentence, a side, ...)
A = TypeVar("A")  # the artifact a case gets (a NodeReport, Claims, AtomicUnits, ...)


@dataclass(frozen=True)
class Ask(Generic[P]):
    """One judge request of a case and what scoring its answer needs."""

    request: JudgeRequest
    about: P


@dataclass(frozen=True)
class Answers(Generic[P]):
    """One case's asks answered: (about, result) in the order the case asked, and their cost."""

    pairs: list[tuple[P, JudgeResult]]
    cost: NodeCost

    @property
    def results(self) -> list[JudgeResult]:
        return [res for _, res in self.pairs]


@dataclass(frozen=True)
class ShardPlan:
    """A shard's requests and how to write every case's artifact from their results."""

    requests: list[JudgeRequest]
    write: Callable[[list[JudgeResult]], None]


class LLMNode(NodeBase, Generic[P, A]):
    """Base of every LLM-judge node: subclasses implement `plan_case` and `score_case`."""

    name: str

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        """The shard's requests in one judge call, recorded once; every case's artifact written
        before the node's bar is topped up."""
        self.start_shard(ctx)
        plan = self.plan_shard(states, ctx)
        progress = CaseProgress(ctx, self.name, len(plan.requests), len(states))
        batch = ask_judge(ctx, self.name, plan.requests, progress)
        ctx.record_judged(self.name, batch)
        plan.write(batch.results)
        progress.finish()

    def start_shard(self, ctx: RunContext) -> None:
        """Hook: read run-level settings before a shard is planned (default: nothing)."""

    def plan_case(self, state: CaseState, ctx: RunContext) -> Sequence[Ask[P]] | None:
        """The case's asks, in the order they go to the judge; [] for a case that gets a
        section without asking anything, None for one that gets no section."""
        raise NotImplementedError

    def score_case(self, state: CaseState, answers: Answers[P]) -> A:
        """The case's artifact from its answers; may add to the node's run-level accumulators."""
        raise NotImplementedError

    def plan_shard(self, states: Sequence[CaseState], ctx: RunContext) -> ShardPlan:
        """Hook: every case's asks, flattened in case order, and a writer that slices the
        results back per case. Override only when requests are not per case."""
        plans = [self.plan_case(state, ctx) for state in states]
        requests = [ask.request for plan in plans if plan is not None for ask in plan]
        price = ctx.settings.gpu_hour_price

        def write(results: list[JudgeResult]) -> None:
            pos = 0
            for state, plan in zip(states, plans, strict=True):
                if plan is None:
                    continue
                mine = results[pos : pos + len(plan)]
                pos += len(plan)
                pairs = [(ask.about, res) for ask, res in zip(plan, mine, strict=True)]
                state.artifacts[self.name] = self.score_case(
                    state, Answers(pairs, case_cost(mine, price)))

        return ShardPlan(requests, write)


"""What every LLM-judge node shares: one guarded judge call per node, progress, per-case cost.

The node contract built on these (`LLMNode`) is in nodes/llm_node.py.

Why a wrapper: a node must report a failing judge as per-metric `error`s instead of crashing
the run, must still work when no judge is configured (the heuristic red-team layer is
free), and must charge each case exactly the work done for it so per-case costs add up to the
node's usage in summary.json.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from nexagauge_local.judge import (
    CacheStoreError,
    FailureKind,
    JudgeRequest,
    JudgeResult,
    JudgeStartError,
    usd,
)
from nexagauge_local.nodes.base import JudgeBatch, RunContext
from nexagauge_local.results import NodeCost

NO_JUDGE = "no judge configured"


def failed(error: str, failure: FailureKind = FailureKind.JUDGE_FAILED) -> JudgeResult:
    return JudgeResult.failed(failure, error)


class CaseProgress:
    """Turns the client's "n requests done" callbacks into whole cases on the node's bar.

    Requests per case vary (claims: one per chunk), so cases advance in proportion; `finish`
    tops the bar up to every case once the node has written its artifacts.
    """

    def __init__(self, ctx: RunContext, node: str, n_requests: int, n_cases: int) -> None:
        self.ctx, self.node = ctx, node
        self.n_requests, self.n_cases = max(n_requests, 1), n_cases
        self.done_requests = 0
        self.advanced = 0

    def __call__(self, n: int) -> None:
        self.done_requests = min(self.n_requests, self.done_requests + n)
        target = self.done_requests * self.n_cases // self.n_requests
        self._to(min(target, self.n_cases - 1))  # the last case waits for finish()

    def _to(self, target: int) -> None:
        if target > self.advanced:
            self.ctx.advance(self.node, target - self.advanced)
            self.advanced = target

    def finish(self) -> None:
        self._to(self.n_cases)


def ask_judge(
    ctx: RunContext, node: str, requests: Sequence[JudgeRequest], progress: CaseProgress
) -> JudgeBatch:
    """All of a node's requests in ONE client call; results aligned with `requests`.

    No judge configured -> every result fails with NO_JUDGE. A judge that raises while
    answering (out of memory mid-batch) -> every result fails with the exception text; the run
    goes on and each metric carries the error. An engine that cannot start, or a cache that
    refuses the answers, is no answer at all: it stops the run (JudgeStartError,
    CacheStoreError; exit 2). Nothing is written to `ctx` here: the returned batch carries
    the bookkeeping (prompt version, truncated inputs) that `ctx.record_judged` records, so a
    node whose judge never answered is visible at the end of the run (and exits 3 from the CLI).
    """
    if not requests:
        return JudgeBatch([])
    versions = sorted({r.prompt_version for r in requests if r.prompt_version})
    results = _ask(ctx, node, requests, progress)
    truncated = [(req.case_id, {"node": node, "metric": req.metric, **cut})
                 for req, res in zip(requests, results)
                 if (cut := res.extra.get("input_truncated"))]
    return JudgeBatch(results, ",".join(versions), truncated)


def _ask(
    ctx: RunContext, node: str, requests: Sequence[JudgeRequest], progress: CaseProgress
) -> list[JudgeResult]:
    if not ctx.has_judge(node):
        return [failed(NO_JUDGE, FailureKind.NO_JUDGE) for _ in requests]
    try:
        results = ctx.judge_for(node).run(node, list(requests), progress=progress)
    except (JudgeStartError, CacheStoreError):
        raise  # no judge to answer, or nowhere to keep its answers: the run stops (exit 2)
    except Exception as exc:  # noqa: BLE001 - reported per metric, by design
        return [failed(f"judge failed: {type(exc).__name__}: {exc}"[:300]) for _ in requests]
    if len(results) != len(requests):
        return [failed(f"judge returned {len(results)} results for {len(requests)} requests")
                for _ in requests]
    return results


def charged(result: JudgeResult) -> bool:
    """Whether this result cost backend work in this run (cache hits and in-node duplicates
    did not, matching the ledger in summary.json)."""
    return not result.cached and not result.extra.get("duplicate", False)


def case_cost(results: Iterable[JudgeResult], gpu_hour_price: float | None) -> NodeCost:
    """Tokens and device-seconds of one case's requests; USD only when a price is set. A
    request whose device time is unknown (a judge server's, its GPUs not stated) makes the
    case's device-seconds and priced cost null, as summary.json's are, never a partial sum."""
    inp = out = 0
    gpu: float | None = 0.0
    for r in results:
        if charged(r):
            inp += r.prompt_tokens
            out += r.output_tokens
            gpu = None if gpu is None or r.gpu_seconds is None else gpu + r.gpu_seconds
    cost = (None if gpu_hour_price else 0.0) if gpu is None else usd(gpu, gpu_hour_price)
    return NodeCost(cost=cost, input_tokens=float(inp), output_tokens=float(out),
                    gpu_seconds=gpu)

"""refmatch: lexical overlap with the reference (ROUGE-1/2/L F-measure, BLEU, METEOR).

These are informational metrics: their scale depends on answer length and phrasing, so they
carry no pass/fail of their own and do not gate the case's `eval.passed`.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import signal
from collections.abc import Iterator, Sequence
from multiprocessing.pool import Pool
from typing import TYPE_CHECKING, Any

from nexagauge_local.libc import die_with_parent
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.results import MetricResult, NodeReport

if TYPE_CHECKING:  # the scorer imports nltk, rouge-score and sacrebleu: loaded when the node runs
    from nexagauge_local.scoring.lexical import LexicalScorer

CATEGORY = "reference|lexical"


def refmatch_metrics(
    scorer: LexicalScorer, reference: str, output: str, wordnet: object, matching: str
) -> list[MetricResult]:
    metrics: list[MetricResult] = []
    for name, parts in scorer.rouge(reference, output).items():
        metrics.append(MetricResult(name=name, category=CATEGORY, score=parts["fmeasure"], result=[parts]))
    b = scorer.bleu(reference, output)
    metrics.append(MetricResult(name="bleu", category=CATEGORY, score=b["score"], result=[b]))
    m = scorer.meteor(reference, output, wordnet)
    metrics.append(
        MetricResult(name="meteor", category=CATEGORY, score=m, result=[{"score": m, "matching": matching}])
    )
    return metrics


SPEC = NodeSpec("refmatch", ("scan",), ("output", "reference"), "deterministic",
                "ROUGE-1/2/L, BLEU, METEOR against the reference",
                order=9, impl=f"{__name__}:RefmatchNode", metric=True, reported=True)


# Below this many cases a shard is scored in-process: forking the pool costs more than it saves.
PARALLEL_MIN_CASES = 400


def _init_worker(parent_pid: int, scorer: LexicalScorer, wordnet: object, matching: str) -> None:
    """Runs once in each forked worker: the scorer and WordNet arrive by fork, not by pickle
    (a WordNet reader does not pickle), and live for the worker's life in its own module.
    The worker dies with the run, even a run killed with `kill -9`.

    SIGTERM, which Pool.terminate sends, gets back its default action: the CLI's handler
    (cli/signals.py), inherited through fork, runs only when the worker's Python loop gets to
    it, and a worker parked on the pool's task lock once kept the whole run waiting on it."""
    global _WORKER
    die_with_parent(parent_pid)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _WORKER = (scorer, wordnet, matching)


# per worker process only, set by _init_worker: (scorer, wordnet, matching)
_WORKER: tuple[LexicalScorer, object, str] | None = None


def _score_in_worker(pair: tuple[str, str]) -> list[MetricResult]:
    assert _WORKER is not None, "_init_worker runs first in every pool worker"
    scorer, wordnet, matching = _WORKER
    return _score(scorer, pair, wordnet, matching)


def _score(scorer: LexicalScorer, pair: tuple[str, str], wordnet: object, matching: str) -> list[MetricResult]:
    try:
        return refmatch_metrics(scorer, pair[0], pair[1], wordnet, matching)
    except Exception as exc:  # noqa: BLE001 - a metric failure is reported on the case, never fatal
        return [MetricResult(name="refmatch", category=CATEGORY, score=None, error=repr(exc))]


class RefmatchNode(NodeBase):
    """ROUGE, BLEU and METEOR are pure Python (tokenisers, stemmer, n-gram counts): on a
    large shard the cases are spread over a forked pool of one process per core, which
    inherits the loaded scorer instead of importing and pickling it. Each scored case is
    handed to the runner at once (ctx.case_done), so the main process writes case reports
    while the workers score instead of waiting for the whole shard."""

    name = SPEC.name

    def __init__(self) -> None:
        from nexagauge_local.scoring.lexical import LexicalScorer

        self.scorer = LexicalScorer()
        self._pool: Pool | None = None
        self._scoring = False  # True while a shard's cases are out with the pool

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        from nexagauge_local.scoring.meteor import wordnet_for

        wordnet, matching = wordnet_for(ctx.settings.cache_dir)
        pairs = [(state.case.reference or "", state.case.output) for state in states]
        pool = self._pool_for(len(pairs), wordnet, matching)
        results: Iterator[list[MetricResult]]
        if pool is not None:
            results = pool.imap(_score_in_worker, pairs, chunksize=32)
        else:
            results = (_score(self.scorer, pair, wordnet, matching) for pair in pairs)
        self._scoring = True
        for state, metrics in zip(states, results, strict=True):
            state.artifacts[self.name] = NodeReport(metrics=metrics)
            ctx.advance(self.name, 1)
            ctx.case_done(state)  # the runner writes its report while the pool scores the next
        self._scoring = False

    def _pool_for(self, n: int, wordnet: object, matching: str) -> Pool | None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
        if n < PARALLEL_MIN_CASES or cores < 2 or "fork" not in mp.get_all_start_methods():
            return None
        if self._pool is None:
            self._pool = mp.get_context("fork").Pool(
                cores, initializer=_init_worker, initargs=(os.getpid(), self.scorer, wordnet, matching)
            )
        return self._pool

    def finalize(self) -> dict[str, Any]:
        self.close()
        return {}

    def close(self) -> None:
        """Idle workers (every case handed out has come back) are let go: each takes the
        pool's stop sentinel and exits. A run stopped mid-shard (Ctrl-C, SIGTERM, SIGHUP)
        terminates them instead, as they may be holding cases it no longer wants."""
        if self._pool is None:
            return
        pool, self._pool = self._pool, None
        if self._scoring:
            pool.terminate()
        else:
            pool.close()
        pool.join()

"""Streaming per-node statistics: updated shard by shard, so no case is kept for the summary.

The median needs every score, so scores are kept, once each, in a `ScoreColumn`: 8 bytes a
score in fixed-size blocks, all but the last on disk. Lists of float objects were 32 bytes a
score; one growing `array('d')` per metric, plus a second per node holding every score again,
was 80 bytes a refmatch case in memory, and its reallocations left holes that glibc's heap
never gave back (the case loop's RSS grew about twice as fast as the scores it held).
"""

from __future__ import annotations

import os
import tempfile
import weakref
from array import array
from collections import Counter
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from itertools import chain
from statistics import fmean

from nexagauge_local.report.node_summary import MetricSummary, NodeSummary
from nexagauge_local.results import NodeReport


class ScoreColumn:
    """Append-only float64 scores: the block being filled in memory, full blocks of BLOCK in
    an unnamed temporary file. The medians need every score, but only once, after the last
    shard; kept in memory they were the one thing (with the id index) that made the case
    loop grow with the run, 40 bytes a refmatch case. Reads use pread, so two iterations
    may interleave."""

    BLOCK = 1 << 16

    def __init__(self) -> None:
        self._block: array[float] = array("d")
        self._spilled = 0  # scores in the file
        self._fd = -1  # an unlinked temporary file, opened at the first full block

    def append(self, score: float) -> None:
        self._block.append(score)
        if len(self._block) >= self.BLOCK:
            self._spill()

    def _spill(self) -> None:
        if self._fd < 0:
            fd, path = tempfile.mkstemp(prefix="nexagauge-scores-")
            os.unlink(path)  # gone from the folder at once; its space goes when fd closes
            self._fd = fd
            weakref.finalize(self, os.close, fd)
        os.pwrite(self._fd, self._block.tobytes(), self._spilled * self._block.itemsize)
        self._spilled += len(self._block)
        self._block = array("d")

    def __len__(self) -> int:
        return self._spilled + len(self._block)

    def __iter__(self) -> Iterator[float]:
        return chain.from_iterable(self.blocks())

    def blocks(self) -> Iterator[array[float]]:
        """The scores in order, a block at a time: those on disk, then the one in memory."""
        size = self._block.itemsize
        for start in range(0, self._spilled, self.BLOCK):  # nothing spilled: no file
            block = array("d")
            count = min(self.BLOCK, self._spilled - start)
            block.frombytes(os.pread(self._fd, count * size, start * size))
            yield block
        if self._block:
            yield self._block


def exact_median(columns: Iterable[ScoreColumn]) -> float | None:
    """statistics.median's value (the middle one, or the mean of the two middle ones) from
    numpy's partition over 8-byte floats: sorting a list of a million float objects took 32 MB."""
    import numpy as np  # lazy: the CLI's start-up never reaches a summary

    columns = list(columns)
    n = sum(len(col) for col in columns)
    if not n:
        return None
    values = np.empty(n, dtype=np.float64)  # filled a block at a time: no second copy
    at = 0
    for col in columns:
        for block in col.blocks():
            values[at : at + len(block)] = np.frombuffer(block, dtype=np.float64)
            at += len(block)
    k = n // 2
    if n % 2:
        values.partition(k)  # in place
        return float(values[k])
    values.partition([k - 1, k])
    return (float(values[k - 1]) + float(values[k])) / 2


@dataclass
class MetricStats:
    scores: ScoreColumn = field(default_factory=ScoreColumn)
    passed: int = 0
    failed: int = 0
    errors: int = 0

    def summary(self) -> MetricSummary:
        """The metric's line of metrics/NODE.json (report/node_summary.py says what each
        number counts), so a gate rule on the pass rate can refuse a rate measured on the
        survivors (gate/coverage.py)."""
        # lazy: scipy (the interval) is only needed once, after the last shard
        from nexagauge_local.redteam.outcomes.rate_stats import rate_stat

        n, gated = len(self.scores) + self.errors, self.passed + self.failed
        stat = rate_stat(self.passed, gated, n)
        return MetricSummary(
            n=n,
            mean=fmean(self.scores) if self.scores else None,
            median=exact_median([self.scores]),
            min=min(self.scores) if self.scores else None,
            max=max(self.scores) if self.scores else None,
            pass_rate=self.passed / gated if gated else None,
            errors=self.errors,
            n_judged=gated,
            coverage=stat.coverage,
            pass_rate_ci95=stat.ci95,
            stats={"pass_rate": stat},
        )


@dataclass
class NodeStats:
    name: str
    eligible: int = 0
    scored: int = 0
    errors: int = 0
    passed: int = 0
    failed: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    metrics: dict[str, MetricStats] = field(default_factory=dict)

    def add_report(self, report: NodeReport) -> None:
        self.scored += 1
        has_error = False
        gate: list[bool] = []
        for m in report.metrics:
            ms = self.metrics.setdefault(m.name, MetricStats())
            if m.error or m.score is None:
                ms.errors += 1
                has_error = True
                continue
            ms.scores.append(m.score)
            if m.passed is not None:
                gate.append(m.passed)
                if m.passed:
                    ms.passed += 1
                else:
                    ms.failed += 1
        self.errors += has_error
        if gate or has_error:
            if all(gate) and not has_error:
                self.passed += 1
            else:
                self.failed += 1

    def summary(self) -> NodeSummary:
        gated = self.passed + self.failed
        columns = [ms.scores for ms in self.metrics.values()]
        return NodeSummary(
            node=self.name,
            eligible=self.eligible,
            scored=self.scored,
            errors=self.errors,
            passed=self.passed if gated else None,
            failed=self.failed if gated else None,
            pass_rate=self.passed / gated if gated else None,
            avg_score=fmean(chain.from_iterable(columns)) if any(len(c) for c in columns) else None,
            median_score=exact_median(columns),
            metrics={name: ms.summary() for name, ms in self.metrics.items()},
            skipped=dict(self.skipped),
        )

"""The `compare` service: two finished runs in, compare.json (and a refreshed report) out.

Why a service: the comparison is a workflow (open both runs, read and match every case
report, bootstrap every metric, write compare.json, refresh the report of a run folder) that
`gate --baseline` and the library need as much as the CLI. Progress is reported through
callbacks, so the caller decides how (or whether) to draw it; failures are RunInputError.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from nexagauge_local.app.errors import RunInputError
from nexagauge_local.compare import BadRunDir, RunDir, compare_runs
from nexagauge_local.compare.bootstrap import DEFAULT_RESAMPLES
from nexagauge_local.compare.diff import Comparison
from nexagauge_local.report.files import write_json

__all__ = [
    "DEFAULT_RESAMPLES",
    "CompareHooks",
    "Compared",
    "compare",
    "compare_dirs",
    "open_run",
]

COMPARE_NAME = "compare.json"


def _ignore(*_args: int) -> None:
    """The default hook: nobody is watching."""


@dataclass(frozen=True)
class CompareHooks:
    """How a caller watches a comparison; every hook is optional.

    `start(total)` once both runs are open (case reports to read, in A and B together);
    `read(n)` per n case reports read; `metric(done, total)` per metric bootstrapped.
    """

    start: Callable[[int], None] = _ignore
    read: Callable[[int], None] = _ignore
    metric: Callable[[int, int], None] = _ignore


@dataclass(frozen=True)
class Compared:
    """What `compare` did: the comparison and the compare.json it wrote."""

    comparison: Comparison
    path: Path


def open_run(path: Path) -> RunDir:
    """A finished run directory, or RunInputError saying why `path` is not one."""
    try:
        return RunDir(path)
    except BadRunDir as exc:
        raise RunInputError(str(exc)) from None


def compare_dirs(
    run_a: RunDir,
    run_b: RunDir,
    *,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    hooks: CompareHooks | None = None,
) -> Comparison:
    """Compare two open runs case by case; a case report that cannot be read is
    RunInputError."""
    hooks = hooks or CompareHooks()
    hooks.start(len(run_a.report_paths()) + len(run_b.report_paths()))
    try:
        return compare_runs(
            run_a, run_b, seed=seed, n_resamples=resamples, progress=hooks.read,
            on_metric=hooks.metric,
        )
    except BadRunDir as exc:
        raise RunInputError(str(exc)) from None


def compare(
    run_a: Path,
    run_b: Path,
    *,
    output_dir: Path | None = None,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    hooks: CompareHooks | None = None,
    console: Console | None = None,
) -> Compared:
    """Compare RUN_A (before) with RUN_B (after) and write OUTPUT_DIR/compare.json (default
    RUN_B). When that folder is a run folder, its report.html is re-rendered to show the
    comparison; a render failure is a warning on `console` (stderr), never a failed compare,
    because compare.json is already written."""
    a, b = open_run(run_a), open_run(run_b)
    comparison = compare_dirs(a, b, seed=seed, resamples=resamples, hooks=hooks)
    out = (output_dir or run_b) / COMPARE_NAME
    write_json(out, comparison.model_dump(mode="json"))
    if (out.parent / "summary.json").exists():  # a run directory: refresh its compare section
        from nexagauge_local.report.html import write_report_or_warn

        write_report_or_warn(out.parent, console or Console(stderr=True))
    return Compared(comparison, out)

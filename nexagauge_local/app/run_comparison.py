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

from nexagauge_local.app.errors import RunInputError
from nexagauge_local.compare import BadRunDir, RunDir, compare_runs
from nexagauge_local.compare.bootstrap import DEFAULT_RESAMPLES
from nexagauge_local.compare.diff import Comparison
from nexagauge_local.events import LogEvents, Notices
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
    # the run folder's manifest was re-finalized for compare.json and report.html; a signature
    # over the old manifest was removed and must be renewed (`sign`)
    manifest_updated: bool = False
    signature_removed: bool = False


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
    notices: Notices | None = None,
) -> Compared:
    """Compare RUN_A (before) with RUN_B (after) and write OUTPUT_DIR/compare.json (default
    RUN_B). When that folder is a run folder, its report.html is re-rendered to show the
    comparison; a render failure is a warning to `notices` (default: logging), never a failed
    compare, because compare.json is already written."""
    a, b = open_run(run_a), open_run(run_b)
    comparison = compare_dirs(a, b, seed=seed, resamples=resamples, hooks=hooks)
    out = (output_dir or run_b) / COMPARE_NAME
    write_json(out, comparison.model_dump(mode="json"))
    if (out.parent / "summary.json").exists():  # a run directory: refresh its compare section
        return _refresh_run(comparison, out, notices if notices is not None else LogEvents())
    return Compared(comparison, out)


def _refresh_run(comparison: Comparison, out: Path, notices: Notices) -> Compared:
    """Re-render the run's report and, in an audited folder, re-finalize its manifest with the
    new compare.json and report.html (`verify` stays true: before, it failed a folder nobody
    tampered with). A folder that no longer matches its manifest in any other file is left
    as it is, with a warning: compare must not attest a tampered case report."""
    from nexagauge_local.app.errors import ReportRefused
    from nexagauge_local.app.report_rerender import rerender_report

    try:
        done = rerender_report(out.parent)
    except ReportRefused as exc:
        notices.warning(f"{exc}; compare.json was written but the manifest was not updated, "
                        "so `verify` will list it")
        return Compared(comparison, out)
    except Exception as exc:  # noqa: BLE001 - compare.json is written; the report is extra
        notices.warning(f"report.html was not refreshed ({type(exc).__name__}: {exc}); "
                        f"retry with: nexagauge-local report {out.parent}")
        return Compared(comparison, out)
    return Compared(comparison, out, done.manifest_updated, done.signature_removed)

"""The comparison half of `reproduce`: did a re-run give the same scores and verdicts?

Why case by case and field by field: "the summary's mean matches" can hide two cases that
swapped verdicts. We compare, per case, every metric's score, error, and each result item's
verdict/passed/severity, plus the eval aggregate. Costs, token counts and timings are never
compared: they describe how a run went, not what it decided. The judge's free text (reasoning,
violations, evidence spans) is compared only for a run whose judge was batch-invariant
(`full=True`, level "full results"): in the shared-batch mode an answer's free text may change
with what shared the engine (docs/reproducibility.md), so only scores and verdicts are checked.

The re-run itself (loading the judge, running the graph) is the runner's job; this module only
turns a manifest into the settings for it (``rerun_plan``) and compares the two folders.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from nexagauge_local.audit.manifest import Manifest

CASE_DIR = "case_report"
RESULT_FIELDS = ("verdict", "passed", "severity")


class FieldDiff(BaseModel):
    case_id: str
    field: str  # e.g. "grounding.faithfulness.score", "redteam.bias.result[0].verdict"
    original: Any
    rerun: Any


LEVELS = {False: "scores and verdicts", True: "full results"}


class ReproReport(BaseModel):
    original: str
    rerun: str
    tolerance: float
    level: str = LEVELS[False]  # what was compared: LEVELS[full]
    cases_compared: int
    missing_cases: list[str]  # in the original, not in the re-run
    extra_cases: list[str]  # in the re-run only
    unreadable: list[str]  # case report files that are not JSON objects
    differences: list[FieldDiff]

    @property
    def reproduced(self) -> bool:
        return not (self.missing_cases or self.extra_cases or self.unreadable or self.differences)

    def lines(self) -> list[str]:
        out = [f"MISSING {c}: in the original run, not in the re-run" for c in self.missing_cases]
        out += [f"EXTRA {c}: in the re-run only" for c in self.extra_cases]
        out += [f"UNREADABLE {f}" for f in self.unreadable]
        out += [
            f"DIFF {d.case_id}: {d.field}: {d.original!r} -> {d.rerun!r}" for d in self.differences
        ]
        tol = f" (score tolerance {self.tolerance})" if self.tolerance else ""
        what = ("identical full results, free text too (the judge was batch-invariant)"
                if self.level == LEVELS[True] else "identical scores and verdicts")
        out.append(
            f"REPRODUCED: {self.cases_compared} cases, {what}{tol}"
            if self.reproduced
            else f"NOT REPRODUCED: {len(self.differences)} field difference(s), "
            f"{len(self.missing_cases)} missing and {len(self.extra_cases)} extra case(s)"
        )
        return out


def case_facts(report: dict[str, Any], full: bool = False) -> dict[str, Any]:
    """Flatten a case report into {field path: value} for the fields a re-run must reproduce:
    each result item's verdict, passed and severity, or with `full` every key of it."""
    facts: dict[str, Any] = {}
    for node, section in report.items():
        if not isinstance(section, dict) or not isinstance(section.get("metrics"), list):
            continue
        seen: dict[str, int] = {}
        for m in section["metrics"]:
            if not isinstance(m, dict):
                continue
            name = str(m.get("name"))
            n = seen[name] = seen.get(name, 0) + 1
            key = f"{node}.{name}" if n == 1 else f"{node}.{name}#{n}"
            facts[f"{key}.score"] = m.get("score")
            facts[f"{key}.error"] = m.get("error")
            items = m.get("result") or []
            facts[f"{key}.result_count"] = len(items)
            for i, item in enumerate(items):
                if isinstance(item, dict):
                    for f in sorted(item) if full else RESULT_FIELDS:
                        if f in item:
                            facts[f"{key}.result[{i}].{f}"] = item[f]
    ev = report.get("eval")
    if isinstance(ev, dict):
        facts["eval.passed"] = ev.get("passed")
        facts["eval.score"] = ev.get("score")
    if "skipped" in report:
        facts["skipped"] = report["skipped"]
    return facts


def _same(a: Any, b: Any, tolerance: float) -> bool:
    numeric = (int, float)
    if (
        isinstance(a, numeric)
        and isinstance(b, numeric)
        and not isinstance(a, bool)
        and not isinstance(b, bool)
    ):
        if math.isnan(a) and math.isnan(b):
            return True
        return abs(a - b) <= tolerance
    return a == b


def _load_cases(folder: Path) -> tuple[dict[str, dict[str, Any]], list[str]]:
    cases: dict[str, dict[str, Any]] = {}
    bad: list[str] = []
    for p in sorted((folder / CASE_DIR).glob("*.json")):
        rel = p.relative_to(folder).as_posix()
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            bad.append(f"{folder.name}/{rel}")
            continue
        if not isinstance(data, dict):
            bad.append(f"{folder.name}/{rel}")
            continue
        inp = data.get("input")
        cid = inp.get("case_id") if isinstance(inp, dict) else None
        cases[str(cid) if cid is not None else p.stem] = data
    return cases, bad


def compare_runs(
    original: str | os.PathLike[str], rerun: str | os.PathLike[str], tolerance: float = 0.0,
    full: bool = False,
) -> ReproReport:
    """Compare two output folders' case reports; ``tolerance`` is an absolute score tolerance
    (0.0 = exact, the default; the demo judge at temperature 0 must reproduce exactly);
    ``full`` compares the judge's free text too (a batch-invariant judge's runs)."""
    a_dir, b_dir = Path(original), Path(rerun)
    a, bad_a = _load_cases(a_dir)
    b, bad_b = _load_cases(b_dir)
    diffs: list[FieldDiff] = []
    common = sorted(a.keys() & b.keys())
    for cid in common:
        fa, fb = case_facts(a[cid], full), case_facts(b[cid], full)
        for field in sorted(fa.keys() | fb.keys()):
            va, vb = fa.get(field), fb.get(field)
            if not _same(va, vb, tolerance):
                diffs.append(FieldDiff(case_id=cid, field=field, original=va, rerun=vb))
    return ReproReport(
        original=str(a_dir),
        rerun=str(b_dir),
        tolerance=tolerance,
        level=LEVELS[full],
        cases_compared=len(common),
        missing_cases=sorted(a.keys() - b.keys()),
        extra_cases=sorted(b.keys() - a.keys()),
        unreadable=bad_a + bad_b,
        differences=diffs,
    )


class RerunPlan(BaseModel):
    """What the runner needs to repeat a run; the CLI maps ``settings`` onto its options."""

    argv: list[str]  # the original command line, for display
    settings: dict[str, Any]  # the original effective settings with output_dir and no_cache set
    input_path: str | None
    input_sha256: str | None  # check the input against this before re-running
    judge_profile: str | None
    weights_sha256: str | None  # and the judge weights against this


def rerun_plan(manifest: Manifest, output_dir: str | os.PathLike[str]) -> RerunPlan:
    """The manifest's effective settings, pointed at a new folder, with the judge cache off
    (a reproduction that reads cached answers proves nothing about the judge)."""
    settings = dict(manifest.settings)
    settings["output_dir"] = str(output_dir)
    settings["no_cache"] = True
    return RerunPlan(
        argv=list(manifest.argv),
        settings=settings,
        input_path=manifest.input.path if manifest.input else None,
        input_sha256=manifest.input.sha256 if manifest.input else None,
        judge_profile=manifest.judge.profile if manifest.judge else None,
        weights_sha256=manifest.judge.weights_sha256 if manifest.judge else None,
    )

"""The pure parts of scripts/bench_parity.py: records in, case reports read, differences
measured and tabled. No process is started here and nexa-gauge is never imported, so the tests
run without the other tool's virtual environment. Why two scores differ is parity_reasons.py's.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

TOLERANCE = 0.01
NG_ROUNDING = 0.5e-4  # nexa-gauge rounds its scores to 4 decimals

REFMATCH_METRICS = ("rouge1", "rouge2", "rougeL", "bleu", "meteor")
REFALIGN_METRICS = ("refalign_precision", "refalign_recall", "refalign_f1", "refalign_global_similarity")

# Field aliases of shared/spec/data-schema.md (case-insensitive keys), first match wins. The
# script resolves them itself and hands both tools canonical records, so the comparison is of
# scoring only, not of two alias tables.
ALIASES: dict[str, tuple[str, ...]] = {
    "case_id": ("case_id", "id"),
    "output": ("output", "generation", "response", "answer", "completion", "actual_output"),
    "input": ("input", "question", "query", "prompt", "user_input"),
    "reference": ("reference", "ground_truth", "gold_answer", "label", "expected_output"),
}

# ---------------------------------------------------------------------------------- records


def load_records(path: Path) -> list[dict[str, Any]]:
    """A JSON array, a JSON object holding one, or JSONL."""
    text = path.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        data = json.loads(text)
    elif stripped.startswith("{") and path.suffix == ".json":
        obj = json.loads(text)
        data = next((v for v in obj.values() if isinstance(v, list)), [obj])
    else:
        data = [json.loads(line) for line in text.splitlines() if line.strip()]
    return [r for r in data if isinstance(r, dict)]


def _field(record: Mapping[str, Any], logical: str) -> Any:
    lowered = {str(k).lower(): v for k, v in record.items()}
    for key in ALIASES[logical]:
        if lowered.get(key) not in (None, ""):
            return lowered[key]
    return None


def _text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, list):
        value = "\n".join(str(v) for v in value)
    text = str(value)
    return text if text.strip() else None


def prepare_records(
    records: Iterable[Mapping[str, Any]], prefix: str = "", refalign_threshold: float | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """Canonical records both tools score alike, and the reasons records were left out.

    A record without an id gets `<prefix>rec-<sha1 of output+reference>` (each tool would hash
    differently). With `refalign_threshold`, every record carries an explicit refalign block so
    neither tool falls back to its own default.
    """
    out: list[dict[str, Any]] = []
    dropped: list[str] = []
    seen: set[str] = set()
    for i, rec in enumerate(records):
        output, reference = _text(_field(rec, "output")), _text(_field(rec, "reference"))
        raw_id = _field(rec, "case_id")
        if raw_id is None:
            digest = hashlib.sha1(f"{output}\x00{reference}".encode()).hexdigest()[:12]
            raw_id = f"rec-{digest}"
        case_id = f"{prefix}{raw_id}"
        if output is None or reference is None:
            dropped.append(f"{case_id}: no {'output' if output is None else 'reference'}")
            continue
        if case_id in seen:
            dropped.append(f"{case_id}: duplicate case id (record {i})")
            continue
        seen.add(case_id)
        row: dict[str, Any] = {"case_id": case_id, "output": output, "reference": reference}
        question = _text(_field(rec, "input"))
        if question is not None:
            row["input"] = question
        if refalign_threshold is not None:
            row["refalign"] = {"similarity_threshold": refalign_threshold}
        out.append(row)
    return out, dropped


# ---------------------------------------------------------------------------- case reports


@dataclass
class CaseScores:
    """One tool's scores for one case, under the common metric names, with what explains them."""

    case_id: str
    output: str | None = None
    reference: str | None = None
    scores: dict[str, float] = field(default_factory=dict)
    detail: dict[str, Any] = field(default_factory=dict)


def _metric_rows(section: Any) -> list[dict[str, Any]]:
    if isinstance(section, Mapping):
        rows = section.get("metrics") or []
        return [r for r in rows if isinstance(r, Mapping)]
    return []


def _first_result(row: Mapping[str, Any]) -> dict[str, Any]:
    res = row.get("result")
    return dict(res[0]) if isinstance(res, list) and res and isinstance(res[0], Mapping) else {}


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _case_of(report: Mapping[str, Any]) -> CaseScores:
    """An empty CaseScores for a case report of either tool (both have the same `input`)."""
    inp = report.get("input") or {}
    return CaseScores(str(inp.get("case_id")), inp.get("output"), inp.get("reference"))


def _take_scores(cs: CaseScores, section: Any, names: Sequence[str]) -> list[Mapping[str, Any]]:
    """Store the numeric score of each metric row of `section` named in `names`; those rows."""
    taken = []
    for row in _metric_rows(section):
        name, score = row.get("name"), _num(row.get("score"))
        if name in names and score is not None:
            cs.scores[name] = score
            taken.append(row)
    return taken


def local_case(report: Mapping[str, Any]) -> CaseScores:
    """A nexagauge-local case_report/<case>.json: sections `refmatch` and `refalign`."""
    cs = _case_of(report)
    for row in _take_scores(cs, report.get("refmatch"), REFMATCH_METRICS):
        res = _first_result(row)
        if row.get("name") == "meteor" and "matching" in res:
            cs.detail["meteor_matching"] = res["matching"]
    for row in _metric_rows(report.get("refalign")):
        name, res = row.get("name"), _first_result(row)
        if name in ("refalign", "refalign_f1") and res:
            for key in ("precision", "recall", "f1"):
                if _num(res.get(key)) is not None:
                    cs.scores[f"refalign_{key}"] = float(res[key])
            matched = res.get("matched") or []
            missed, extra = res.get("missed") or [], res.get("extra") or []
            out_units = [m.get("output_unit") for m in matched] + list(extra)
            # many-to-one pairs may reuse a reference unit: each counted once
            ref_units = list(dict.fromkeys(m.get("reference_unit") for m in matched)) + list(missed)
            cs.detail.update(
                threshold=_num(res.get("similarity_threshold")),
                output_units=len(out_units),
                reference_units=len(ref_units),
                output_unit_texts=sorted(str(u) for u in out_units),
                reference_unit_texts=sorted(str(u) for u in ref_units),
                output_unit_list=[str(u) for u in out_units],
                reference_unit_list=[str(u) for u in ref_units],
                pair_similarities=[s for m in matched if (s := _num(m.get("similarity"))) is not None],
            )
            if _num(res.get("global_cosine")) is not None:
                cs.scores.setdefault("refalign_global_similarity", float(res["global_cosine"]))
        elif name in ("semantic_similarity", "refalign_global_similarity") and _num(row.get("score")) is not None:
            cs.scores["refalign_global_similarity"] = float(row["score"])
    return cs


def nexagauge_case(report: Mapping[str, Any]) -> CaseScores:
    """A nexa-gauge case_report/<case>.json: `refmatch_metrics`, `refalign_metrics`, chunks."""
    cs = _case_of(report)
    _take_scores(cs, report.get("refmatch_metrics"), REFMATCH_METRICS)
    _take_scores(cs, report.get("refalign_metrics"), REFALIGN_METRICS)
    for row in _metric_rows(report.get("refalign_metrics")):
        if row.get("name") == "refalign_score":
            score = _num(row.get("score"))
            res = _first_result(row)
            counts = res.get("counts") or {}
            cs.detail.update(
                threshold=_num(res.get("similarity_threshold")),
                output_units=counts.get("output_chunks"),
                reference_units=counts.get("reference_chunks"),
                max_similarity=score,
                pair_similarities=[
                    s for m in res.get("matched_pairs") or [] if (s := _num(m.get("similarity"))) is not None
                ]
                + [
                    s
                    for m in (res.get("extra_output_chunks") or []) + (res.get("missed_reference_chunks") or [])
                    if (s := _num(m.get("best_similarity"))) is not None
                ],
            )
    for side, key in (("output", "output_refined_chunks"), ("reference", "reference_refined_chunks")):
        section = report.get(key)
        if isinstance(section, Mapping) and isinstance(section.get("text"), list):
            units = [str(t) for t in section["text"] if t]
            cs.detail[f"{side}_unit_texts"] = sorted(units)
            cs.detail[f"{side}_unit_list"] = units
    chunk = report.get("output_chunk")
    if isinstance(chunk, Mapping) and isinstance(chunk.get("text"), list):
        cs.detail["output_chunks_before_refiner"] = len(chunk["text"])
    return cs


def read_case_reports(folder: Path, parse) -> dict[str, CaseScores]:
    """case_id -> scores for every case_report/*.json under `folder` (matched by the id inside)."""
    cases: dict[str, CaseScores] = {}
    report_dir = folder / "case_report"
    for path in sorted(report_dir.glob("*.json")) if report_dir.is_dir() else []:
        cs = parse(json.loads(path.read_text(encoding="utf-8")))
        if cs.scores:
            cases[cs.case_id] = cs
    return cases


# ------------------------------------------------------------------------------ diff stats


def match_cases(
    local: Mapping[str, Any], other: Mapping[str, Any]
) -> tuple[list[str], list[str], list[str]]:
    """(ids in both, ids only in local, ids only in other), each sorted."""
    a, b = set(local), set(other)
    return sorted(a & b), sorted(a - b), sorted(b - a)


@dataclass
class MetricDiff:
    metric: str
    compared: int = 0
    max_abs: float = 0.0
    mean_abs: float = 0.0
    identical_at_4dp: int = 0  # |local rounded to 4 dp - nexa-gauge| < 1e-9
    over: list[tuple[str, float, float, float]] = field(default_factory=list)  # case, local, ng, |d|


def diff_stats(
    metric: str, pairs: Sequence[tuple[str, float, float]], tolerance: float = TOLERANCE
) -> MetricDiff:
    """Largest and mean |local - nexa-gauge| over (case, local, ng) pairs; cases over tolerance."""
    d = MetricDiff(metric, compared=len(pairs))
    if not pairs:
        return d
    diffs = [abs(a - b) for _, a, b in pairs]
    d.max_abs = max(diffs)
    d.mean_abs = math.fsum(diffs) / len(diffs)
    d.identical_at_4dp = sum(1 for _, a, b in pairs if abs(round(a, 4) - b) < 1e-9)
    d.over = sorted(
        ((c, a, b, abs(a - b)) for c, a, b in pairs if abs(a - b) > tolerance),
        key=lambda t: (-t[3], t[0]),
    )
    return d


def metric_pairs(
    local: Mapping[str, CaseScores], other: Mapping[str, CaseScores], metric: str
) -> list[tuple[str, float, float]]:
    common, _, _ = match_cases(local, other)
    return [
        (c, local[c].scores[metric], other[c].scores[metric])
        for c in common
        if metric in local[c].scores and metric in other[c].scores
    ]


# ---------------------------------------------------------------------------------- tables


def format_table(diffs: Sequence[MetricDiff], tolerance: float = TOLERANCE) -> str:
    """A Markdown table: metric, cases, identical at 4 dp, max and mean |diff|, cases over tol."""
    lines = [
        f"| metric | cases | identical at 4 dp | max abs diff | mean abs diff | cases > {tolerance} |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for d in diffs:
        lines.append(
            f"| {d.metric} | {d.compared} | {d.identical_at_4dp} | {d.max_abs:.4f} | "
            f"{d.mean_abs:.4f} | {len(d.over)} |"
        )
    return "\n".join(lines)

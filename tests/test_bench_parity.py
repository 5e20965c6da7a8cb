"""scripts/bench_parity.py's pure parts (scripts/benchlib/parity.py and parity_reasons.py) on
small fabricated case reports: record preparation, report parsing, case matching, diff statistics
and the reason ladders. nexa-gauge and its virtual environment are not needed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from benchlib import parity as P
from benchlib import parity_reasons as R


def _local_report(case_id: str, output: str, reference: str, scores: dict, refalign: dict | None = None):
    rm = [{"name": n, "category": "reference|lexical", "score": s, "result": [{}], "error": None}
          for n, s in scores.items()]
    for row in rm:
        if row["name"] == "meteor":
            row["result"] = [{"score": row["score"], "matching": "exact+stem"}]
    rep = {"target_node": "refmatch", "input": {"case_id": case_id, "output": output, "reference": reference},
           "refmatch": {"metrics": rm}}
    if refalign is not None:
        rep["refalign"] = {"metrics": [
            {"name": "refalign", "score": refalign["f1"], "result": [refalign]},
            {"name": "semantic_similarity", "score": refalign["global_cosine"],
             "result": [{"global_cosine": refalign["global_cosine"]}]},
        ]}
    return rep


def _ng_report(case_id: str, output: str, reference: str, scores: dict, units=None, threshold=0.6):
    rep = {"target_node": "refmatch", "input": {"case_id": case_id, "output": output, "reference": reference},
           "refmatch_metrics": {"metrics": [{"name": n, "score": s, "verdict": "PASSED", "result": None}
                                            for n, s in scores.items() if not n.startswith("refalign")]}}
    ra = [{"name": n, "score": s, "result": [{"metric": n}]} for n, s in scores.items() if n.startswith("refalign")]
    if units is not None:
        out_u, ref_u = units
        ra.append({"name": "refalign_score", "score": 0.9, "result": [{
            "similarity_threshold": threshold,
            "counts": {"output_chunks": len(out_u), "reference_chunks": len(ref_u)},
            "matched_pairs": [], "extra_output_chunks": [], "missed_reference_chunks": []}]})
        rep["output_chunk"] = {"text": list(out_u)}
        rep["output_refined_chunks"] = {"text": list(out_u)}
        rep["reference_refined_chunks"] = {"text": list(ref_u)}
    if ra:
        rep["refalign_metrics"] = {"metrics": ra}
    return rep


def test_prepare_records_resolves_aliases_ids_and_threshold():
    recs = [
        {"id": "a", "answer": "x", "ground_truth": ["r1", "r2"], "question": "q"},
        {"response": "no reference"},
        {"output": "o", "reference": "r"},
        {"case_id": "a", "output": "dup", "reference": "r"},
    ]
    rows, dropped = P.prepare_records(recs, prefix="s.", refalign_threshold=0.6)
    assert rows[0] == {"case_id": "s.a", "output": "x", "reference": "r1\nr2", "input": "q",
                       "refalign": {"similarity_threshold": 0.6}}
    assert rows[1]["case_id"].startswith("s.rec-") and rows[1]["case_id"] == P.prepare_records([recs[2]], "s.")[0][0]["case_id"]
    assert "refalign" not in P.prepare_records([recs[2]])[0][0]
    assert len(rows) == 2 and len(dropped) == 2
    assert any("no reference" in d for d in dropped) and any("duplicate" in d for d in dropped)


def test_load_records_json_and_jsonl(tmp_path: Path):
    (tmp_path / "a.json").write_text(json.dumps([{"output": "o"}]))
    (tmp_path / "b.jsonl").write_text('{"output": "o"}\n\n{"output": "p"}\n')
    assert len(P.load_records(tmp_path / "a.json")) == 1
    assert len(P.load_records(tmp_path / "b.jsonl")) == 2


def test_parse_both_report_shapes_and_match(tmp_path: Path):
    loc = P.local_case(_local_report("c1", "o", "r", {"rouge1": 0.5, "meteor": 0.4}, {
        "similarity_threshold": 0.6, "precision": 0.5, "recall": 1.0, "f1": 2 / 3, "global_cosine": 0.8,
        "matched": [{"output_unit": "A.", "reference_unit": "R.", "similarity": 0.9}],
        "missed": [], "extra": ["B."]}))
    assert loc.scores == {"rouge1": 0.5, "meteor": 0.4, "refalign_precision": 0.5, "refalign_recall": 1.0,
                          "refalign_f1": pytest.approx(2 / 3), "refalign_global_similarity": 0.8}
    assert loc.detail["meteor_matching"] == "exact+stem"
    assert loc.detail["output_unit_texts"] == ["A.", "B."] and loc.detail["threshold"] == 0.6
    ng = P.nexagauge_case(_ng_report("c1", "o", "r", {"rouge1": 0.5, "refalign_f1": 1.0}, (["A. B."], ["R."])))
    assert ng.scores == {"rouge1": 0.5, "refalign_f1": 1.0}
    assert ng.detail["output_unit_texts"] == ["A. B."] and ng.detail["output_units"] == 1

    for name, rep in (("l", _local_report("c1", "o", "r", {"bleu": 0.1})), ("n", _ng_report("c2", "o", "r", {"bleu": 0.2}))):
        (tmp_path / name / "case_report").mkdir(parents=True)
        (tmp_path / name / "case_report" / "x.json").write_text(json.dumps(rep))
    a = P.read_case_reports(tmp_path / "l", P.local_case)
    b = P.read_case_reports(tmp_path / "n", P.nexagauge_case)
    assert P.match_cases(a, b) == ([], ["c1"], ["c2"])
    assert P.read_case_reports(tmp_path / "missing", P.local_case) == {}


def test_diff_stats():
    d = P.diff_stats("bleu", [("a", 0.5, 0.5), ("b", 0.30004, 0.3), ("c", 0.2, 0.25)], tolerance=0.01)
    assert d.compared == 3 and d.identical_at_4dp == 2
    assert d.max_abs == pytest.approx(0.05) and d.mean_abs == pytest.approx((0.00004 + 0.05) / 3)
    assert [(c, round(x, 4)) for c, _, _, x in d.over] == [("c", 0.05)]
    assert P.diff_stats("bleu", []).compared == 0
    table = P.format_table([d])
    assert "| bleu | 3 | 2 | 0.0500 |" in table


def test_bleu_gap_is_unexplained_now_both_compute_it_alike():
    # both tools: nltk sentence_bleu method1 on str.split() tokens (0.0955 here, as nexa-gauge
    # reported on data/sample.jsonl ref-capital-australia), so no detail is left to swap
    ref, out = "Canberra is the capital of Australia.", "The capital of Australia is Canberra."
    reasons = R.bleu_reasons(ref, out)
    assert reasons[0].startswith("unexplained") and "recomputed 0.0955" in reasons[0]


def test_meteor_ladder_wordnet_only():
    ref, out = "Canberra is the capital of Australia.", "The capital of Australia is Canberra."
    # same tokens and the same WordNet option: nothing to name
    reasons = R.meteor_reasons(ref, out, R.NoSynonyms(), R.NoSynonyms(), "exact+stem", "exact+stem")
    assert reasons[0].startswith("unexplained")

    class Lemma:
        def __init__(self, name):
            self._name = name

        def name(self):
            return self._name

    class Synset:
        def lemmas(self):
            return [Lemma("big"), Lemma("huge")]

    class Syn:  # a WordNet whose only synonym pair is big/huge (words their own stems)
        def synsets(self, word, *a, **k):
            return [Synset()] if word in ("big", "huge") else []

    reasons = R.meteor_reasons("the house has a huge red door", "the house has a big red door", Syn(), R.NoSynonyms(), "exact+stem+wordnet", "exact+stem")
    assert [R.reason_kind(r) for r in reasons] == ["WordNet option"]


def test_rouge_reasons():
    assert R.rouge_reasons(0.66666, 0.6667)[0].startswith("rounding")
    assert R.rouge_reasons(0.5, 0.6)[0].startswith("tokeniser/stemming")


def _fake_embed(texts):
    """Deterministic vectors: texts starting with the same letter are near-identical."""
    out = []
    for t in texts:
        v = np.zeros(4)
        v["ABCD".index(t[0]) if t[0] in "ABCD" else 3] = 1.0
        v[3] += 0.01 * len(t)
        out.append(v)
    return np.asarray(out)


def test_refalign_ladder_units():
    # nexa-gauge: output units A1, A2 both best-match reference A -> many-to-one precision 1.0
    # here: the same many-to-one rule, but the output split into three units A1, A2, B
    ng = P.nexagauge_case(_ng_report("c", "A1 A2 B", "A", {"refalign_precision": 1.0}, (["A1", "A2"], ["A"])))
    loc = P.local_case(_local_report("c", "A1 A2 B", "A", {}, {
        "similarity_threshold": 0.6, "precision": 2 / 3, "recall": 1.0, "f1": 0.8, "global_cosine": 0.7,
        "matched": [{"output_unit": "A1", "reference_unit": "A", "similarity": 0.99},
                    {"output_unit": "A2", "reference_unit": "A", "similarity": 0.99}],
        "missed": [], "extra": ["B"]}))
    # a reference unit shared by two pairs is one unit
    assert loc.detail["reference_units"] == 1 and loc.detail["output_units"] == 3
    reasons = R.classify("refalign_precision", loc, ng, embed=_fake_embed)
    assert [R.reason_kind(r) for r in reasons] == ["units"], reasons
    assert "(1.0000 -> 0.6667" in reasons[0]
    # without an embedder the reports alone still show the unit difference
    no_embed = R.classify("refalign_precision", loc, ng)
    assert R.reason_kind(no_embed[0]) == "different chunking"


def test_refalign_global_similarity_has_no_unit_reason():
    # both tools embed the whole texts: different units do not move global similarity
    ng = P.nexagauge_case(_ng_report("c", "A1 A2 B", "A", {"refalign_global_similarity": 0.5}, (["A1", "A2"], ["A"])))
    loc = P.local_case(_local_report("c", "A1 A2 B", "A", {}, {
        "similarity_threshold": 0.6, "precision": 2 / 3, "recall": 1.0, "f1": 0.8, "global_cosine": 0.7,
        "matched": [], "missed": ["A"], "extra": ["A1", "A2", "B"]}))
    assert R.reason_kind(R.classify("refalign_global_similarity", loc, ng)[0]) == "embedding numerics"


def test_refalign_threshold_default_and_residual():
    ng = P.nexagauge_case(_ng_report("c", "A", "A", {"refalign_f1": 1.0}, (["A"], ["Ab"]), threshold=0.6))
    loc = P.local_case(_local_report("c", "A", "A", {}, {
        "similarity_threshold": 0.99999, "precision": 0.0, "recall": 0.0, "f1": 0.0, "global_cosine": 0.9,
        "matched": [], "missed": ["Ab"], "extra": ["A"]}))
    reasons = R.classify("refalign_f1", loc, ng, embed=_fake_embed)
    assert [R.reason_kind(r) for r in reasons] == ["threshold"]
    assert "0.6 -> 0.99999" in reasons[0]
    # a report that the recomputation cannot reproduce is flagged, not silently explained
    ng.scores["refalign_f1"] = 0.5
    assert R.reason_kind(R.classify("refalign_f1", loc, ng, embed=_fake_embed)[-1]) == "residual"
    # report-only path names the threshold default
    assert R.reason_kind(R.classify("refalign_f1", loc, ng)[0]) == "threshold default"


def test_refalign_embedding_dtype_step():
    # same single unit per side; this tool's bfloat16 vectors moved the cosine
    ng = P.nexagauge_case(_ng_report("c", "A", "Ab", {"refalign_global_similarity": 0.99995}, (["A"], ["Ab"])))
    loc = P.local_case(_local_report("c", "A", "Ab", {}, {
        "similarity_threshold": 0.6, "precision": 1.0, "recall": 1.0, "f1": 1.0, "global_cosine": 0.97,
        "matched": [{"output_unit": "A", "reference_unit": "Ab", "similarity": 0.97}], "missed": [], "extra": []}))
    reasons = R.classify("refalign_global_similarity", loc, ng, embed=_fake_embed, local_dtype="bfloat16")
    assert [R.reason_kind(r) for r in reasons] == ["embedding dtype"]
    assert R.reason_kind(R.classify("refalign_global_similarity", loc, ng, local_dtype="bfloat16")[0]) == "embedding dtype"

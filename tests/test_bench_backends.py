"""scripts/bench_backends.py: the comparison on hand-made output dirs (no model), and one real
hf-vs-vLLM run on two records, which must agree: same weights, greedy decoding."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from bench_backends import ROOT, classify, compare_reports

from tests.conftest import fresh_demo_cache, user_env, vllm_or_skip


def _metric(name: str, score: float | None, reasoning: str = "fine", error: str | None = None,
            verdict: str = "SAFE") -> dict[str, Any]:
    result = [] if error else [{"verdict": verdict, "passed": bool(score and score >= 0.6),
                                "reasoning": reasoning, "violations": [], "evidence_spans": []}]
    return {"name": name, "category": "output|generation|answer", "score": score,
            "result": result, "error": error}


def _write(out: Path, case: str, redteam: list[dict], rouge: float, claims: list[str]) -> None:
    report = {
        "target_node": "eval",
        "input": {"case_id": case},
        "claims": {"status": "claims", "claims": claims, "cost": {"gpu_seconds": 1.0}},
        "redteam": {"metrics": redteam, "cost": {"gpu_seconds": 1.0}, "case_score": {}},
        "refmatch": {"metrics": [{"name": "rouge1", "category": "reference|lexical",
                                  "score": rouge, "result": [{}], "error": None}]},
        "eval": {"passed": True, "score": 1.0},
    }
    (out / "case_report").mkdir(parents=True, exist_ok=True)
    (out / "case_report" / f"{case}.json").write_text(json.dumps(report), encoding="utf-8")


def test_compare_reports_counts_and_reasons(tmp_path: Path) -> None:
    hf, vllm = tmp_path / "hf", tmp_path / "vllm"
    _write(hf, "c1", [_metric("bias", 1.0), _metric("toxicity", 1.0),
                      _metric("privacy", 1.0, reasoning="no personal data"),
                      _metric("pii", 1.0)], rouge=0.5, claims=["a"])
    _write(vllm, "c1", [_metric("bias", 1.0), _metric("toxicity", 0.0, verdict="UNSAFE"),
                        _metric("privacy", 1.0, reasoning="nothing private here"),
                        _metric("pii", None, error="engine died")], rouge=0.9, claims=["b"])

    agr = compare_reports(hf, vllm)

    assert agr.compared == 4  # refmatch (deterministic) is not judge output: left out
    assert (agr.same_score, agr.same_verdict, agr.same_result) == (2, 2, 1)
    reasons = {d.metric: d.reason for d in agr.differences}
    assert reasons["toxicity"] == "score differs"
    assert reasons["privacy"] == "same score, free text differs"
    assert reasons["pii"] == "one side failed (error: vllm: engine died)"
    assert "bias" not in reasons
    tox = next(d for d in agr.differences if d.metric == "toxicity")
    assert (tox.case, tox.node, tox.hf, tox.vllm) == ("c1", "redteam", 1.0, 0.0)
    assert (agr.extractions, agr.same_extractions) == (1, 0)  # the claims lists differ
    assert agr.share(agr.same_score) == 0.5


def test_classify_verdict_and_missing() -> None:
    a, b = _metric("bias", 1.0), _metric("bias", 1.0, verdict="UNSAFE")
    assert classify(a, b) == "verdict differs"
    assert classify(a, None) == "missing on the vllm side"
    assert classify(a, dict(a)) is None


@pytest.mark.vllm
@pytest.mark.slow
def test_real_hf_and_vllm_agree(tmp_path: Path, demo_cache_dir: Path, vllm_demo) -> None:
    vllm_or_skip()
    out_json = tmp_path / "bench.json"
    for backend in ("hf", "vllm"):  # the session's dequantised demo weights, not two more
        fresh_demo_cache(tmp_path / "work" / f"cache_{backend}", demo_cache_dir)
    cmd = [sys.executable, str(ROOT / "scripts" / "bench_backends.py"), "--target", "redteam",
           "--limit", "2", "--workdir", str(tmp_path / "work"), "--json", str(out_json)]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800,
                          check=False, env=user_env())
    print(proc.stdout)
    assert proc.returncode in (0, 1), proc.stdout[-3000:] + proc.stderr[-3000:]

    doc = json.loads(out_json.read_text(encoding="utf-8"))
    for backend in ("hf", "vllm"):
        run = doc["runs"][backend]
        assert run["exit_code"] == 0, run["log"]
        assert run["wall_s"] > 0 and run["peak_rss_mb"] > 0
        assert run["load_s"] is not None and run["device_s"] is not None
        assert run["output_tokens"] > 0 and run["cache_hits"] == 0
        assert f"/{backend}/" in run["fingerprint"]
    agr = doc["agreement"]
    assert agr["compared"] > 0
    assert agr["score_share"] >= 0.95, agr["differences"]
    assert proc.returncode == 0


def test_logprob_numerics_are_the_same_answer() -> None:
    """G-Eval's digit probabilities from two engines differ in the 5th decimal: the same
    answer, listed, but counted as identical (seen on the bundled sample)."""
    hf = _metric("quality", 0.34045381)
    vl = _metric("quality", 0.34045502)
    hf["result"][0]["digit_probabilities"] = {"1": 0.45455919}
    vl["result"][0]["digit_probabilities"] = {"1": 0.45455708}
    assert classify(hf, vl) == "same answer, score differs below 5e-4 (logprob numerics)"
    vl["result"][0]["digit_probabilities"] = {"1": 0.46}
    assert classify(hf, vl) == "verdict differs"

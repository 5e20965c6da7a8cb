"""The real judge path end to end through the CLI, offline: tiny random Llama on the hf backend.

Constrained decoding makes even random weights produce schema-valid answers, so every result
must be well-formed; the redteam section must have the spec's keys and types in both modes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.offline import run_offline

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer" / "sample.json"
BINARY_KEYS = {"verdict", "passed", "violations", "evidence_spans"}
OPTIONAL = {"unverified_spans"}


def _check_redteam(section: dict, mode: str, reasoning: bool) -> None:
    assert set(section) >= {"metrics", "cost"}
    names = [m["name"] for m in section["metrics"]]
    assert names[:2] == ["bias", "toxicity"]
    for metric in section["metrics"]:
        assert set(metric) == {"name", "category", "score", "result", "error"}
        assert metric["category"] == "output|generation|answer"
        if metric["error"]:
            continue
        item = metric["result"][0]
        expected = set(BINARY_KEYS)
        if mode == "scale_1_5":
            expected.add("severity")
            assert item["severity"] in (1, 2, 3, 4, 5)
        if reasoning:
            expected.add("reasoning")
            assert isinstance(item["reasoning"], str)
        assert expected <= set(item) <= expected | OPTIONAL
        assert item["verdict"] == ("SAFE" if item["passed"] else "UNSAFE")
        assert item["passed"] == (metric["score"] >= 0.6)
        assert isinstance(item["violations"], list) and isinstance(item["evidence_spans"], list)


@pytest.mark.skipif(not PEER.is_file(), reason="shared/peer/sample.json not present")
def test_run_eval_peer_sample_with_tiny_judge(tiny_judge_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    args = ["run", "eval", "--input", str(PEER), "--output-dir", str(out), "-q", "--limit", "4",
            "--model", str(tiny_judge_dir), "--backend", "hf", "--cache-dir", str(tmp_path / "cache")]
    proc = run_offline(args, tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["nodes"]["redteam"]["backend_calls"] == 1
    assert summary["judge"]["fingerprint"]
    modes = {"eiffel-tower-basic-binary": ("binary_yes_no", False),
             "eiffel-tower-basic-scale": ("scale_1_5", False),
             "eiffel-tower-binary-reason": ("binary_yes_no", True),
             "eiffel-tower-basic-scale-reason": ("scale_1_5", True)}
    for case_id, (mode, reasoning) in modes.items():
        report = json.loads((out / "case_report" / f"{case_id}.json").read_text())
        _check_redteam(report["redteam"], mode, reasoning)
        assert "case_score" in report["redteam"]
        for node in ("grounding", "relevance", "geval", "refmatch", "refalign"):
            for metric in report[node]["metrics"]:
                assert metric["score"] is None or 0.0 <= metric["score"] <= 1.0
    red = json.loads((out / "metrics" / "redteam.json").read_text())
    assert "aggregate_metrics" in red

    # a rerun is served from the cache: zero backend calls anywhere
    proc = run_offline(args, tmp_path, timeout=900)
    assert proc.returncode == 0, proc.stderr
    rerun = json.loads((out / "summary.json").read_text())
    assert rerun["cost"]["backend_calls"] == 0
    assert rerun["cost"]["cache_hits"] > 0

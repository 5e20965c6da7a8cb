"""End to end through the CLI, offline: refmatch and refalign on the peer and bundled samples."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.offline import run_offline

ROOT = Path(__file__).resolve().parents[1]
PEER = ROOT.parent / "shared" / "peer" / "sample.json"
BUNDLED = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
METRIC_KEYS = {"name", "category", "score", "result", "error"}
COST_KEYS = {"cost", "input_tokens", "output_tokens", "gpu_seconds"}


def _datasets() -> list[Path]:
    return [p for p in (PEER, BUNDLED) if p.is_file()]


@pytest.mark.parametrize("target", ["refmatch", "refalign"])
@pytest.mark.parametrize("dataset", _datasets(), ids=lambda p: p.name)
def test_run_offline(target: str, dataset: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_offline(["run", target, "--input", str(dataset), "--output-dir", str(out), "-q",
                        "--cache-dir", str(tmp_path / "cache")], tmp_path, timeout=600)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["target"] == target
    assert summary["cases"]["valid"] > 0
    assert target in summary["nodes_run"]
    node_summary = json.loads((out / "metrics" / f"{target}.json").read_text())
    assert node_summary["scored"] > 0
    assert set(summary["nodes"][target]) >= {"eligible", "requests", "cache_hits", "backend_calls",
                                              "input_tokens", "output_tokens", "gpu_seconds", "wall_seconds"}
    reports = list((out / "case_report").glob("*.json"))
    assert len(reports) == summary["cases"]["valid"]
    scored = 0
    for path in reports:
        report = json.loads(path.read_text())
        assert report["target_node"] == target
        assert set(report["input"]) == {"case_id", "output", "input", "context", "reference"}
        if target in report:
            scored += 1
            section = report[target]
            assert set(section["cost"]) == COST_KEYS
            for metric in section["metrics"]:
                assert set(metric) == METRIC_KEYS
                assert metric["error"] is None
                assert 0.0 <= metric["score"] <= 1.0
        else:
            assert "missing reference" in report["skipped"][target]
    assert scored == node_summary["scored"]


@pytest.mark.skipif(not PEER.is_file(), reason="shared/peer/sample.json not present")
def test_peer_sample_duplicate_is_noted(tmp_path: Path) -> None:
    out = tmp_path / "out"
    proc = run_offline(["run", "refmatch", "--input", str(PEER), "--output-dir", str(out), "-q",
                        "--cache-dir", str(tmp_path / "cache")], tmp_path, timeout=300)
    assert proc.returncode == 0, proc.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["cases"] == {"records": 21, "valid": 20, "skipped": 0, "duplicates": 1}
    assert summary["duplicates"][0]["case_id"] == "bias-hiring-gender-1"

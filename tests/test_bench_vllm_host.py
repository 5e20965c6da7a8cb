"""scripts/bench_vllm_host.py runs end to end on vLLM's real engine (tiny model, a few requests),
and its timers see what they claim to: the capped phase's processor and xgrammar's masks."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import user_env, vllm_or_skip

pytestmark = [pytest.mark.vllm, pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[1]


def test_bench_vllm_host_smoke(tmp_path: Path, demo_cache_dir: Path) -> None:
    vllm_or_skip()
    out = tmp_path / "rows.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_vllm_host.py"), "--models", "tiny",
         "--requests", "8", "--phases", "grammar,clip+caps", "--json", str(out),
         "--cache-dir", str(demo_cache_dir)],
        cwd=ROOT, capture_output=True, text=True, timeout=900, check=False, env=user_env())
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert "H100 step floor" in proc.stdout and "bench_vllm_host: vllm" in proc.stdout
    grammar, caps = json.loads(out.read_text())["tiny"]
    assert (grammar["phase"], caps["phase"]) == ("grammar", "clip+caps")
    for row in (grammar, caps):
        assert row["requests"] == 8 and row["valid"] == 1.0 and row["at_max_tokens"] == 0
        assert row["steps"] > 0 and row["fill_us_per_token"] > 0
    assert caps["caps_us_per_token"] > 0  # the processor ran, and was timed

"""scripts/benchlib/scratch.py: a benchmark's temporary folder is gone when the benchmark ends,
however it ends short of being killed (each case is a real interpreter that exits)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

BODY = """
import sys
sys.path.insert(0, {scripts!r})
from benchlib.scratch import scratch_dir
d = scratch_dir("bench-test-")
(d / "cache").mkdir()
(d / "cache" / "weights.bin").write_bytes(b"0" * 1024)
print(d, flush=True)
{end}
"""


@pytest.mark.parametrize("end", ["", "raise SystemExit(1)", "raise RuntimeError('boom')"])
def test_the_folder_goes_with_the_benchmark(end: str) -> None:
    code = BODY.format(scripts=str(ROOT / "scripts"), end=end)
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
                          check=False)
    folder = Path(proc.stdout.strip())
    assert folder.name.startswith("bench-test-"), proc.stderr
    assert not folder.exists()

"""scripts/bench_peer.py's process timing: a child's own peak memory, and a failing run that
is reported instead of ending the benchmark."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from bench_peer import RunFailed, timed_run


def test_peak_rss_is_the_childs_own_not_the_benchmarks(tmp_path: Path) -> None:
    ballast = bytearray(300 * 1024 * 1024)  # this process is now at least 300 MB
    ballast[::4096] = b"x" * len(ballast[::4096])  # touched, so resident
    seconds, peak_mb = timed_run([sys.executable, "-c", "import time; time.sleep(0.3)"],
                                 {}, tmp_path, timeout=60)
    assert seconds >= 0.3
    assert 1 < peak_mb < 100, peak_mb  # wait4's ru_maxrss said >= 300 here
    del ballast


def test_a_timeout_or_a_failure_raises_run_failed(tmp_path: Path) -> None:
    with pytest.raises(RunFailed, match="timed out after 1 s"):
        timed_run([sys.executable, "-c", "import time; time.sleep(30)"], {}, tmp_path, timeout=1)
    with pytest.raises(RunFailed, match="exit 3"):
        timed_run([sys.executable, "-c", "raise SystemExit(3)"], {}, tmp_path, timeout=60)

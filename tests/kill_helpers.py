"""Crash a run mid-way: SIGKILL it once its judge cache holds enough answers.

The kill-and-resume tests (hf demo judge, OpenAI-compatible endpoint) crash a real `run`
subprocess the same way and then check that the re-run reuses what was committed.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from pathlib import Path


def committed_count(cache_db: Path) -> int:
    """Answers in a judge cache, read-only, while a run may be writing it."""
    if not cache_db.exists():
        return 0
    try:
        with sqlite3.connect(f"file:{cache_db}?mode=ro", uri=True, timeout=1) as con:
            return int(con.execute("SELECT COUNT(*) FROM entries").fetchone()[0])
    except sqlite3.OperationalError:  # table not created yet, or a write in progress
        return 0


def kill_once_committed(proc: subprocess.Popen[str], cache_db: Path, at_least: int,
                        timeout_s: float, poll_s: float) -> float:
    """SIGKILL `proc` as soon as `cache_db` holds `at_least` answers; the seconds that took.
    Fails when the run ends first or nothing is committed within `timeout_s`."""
    started = time.monotonic()
    try:
        while committed_count(cache_db) < at_least:
            assert proc.poll() is None, f"run ended before a commit: {proc.communicate()}"
            assert time.monotonic() - started < timeout_s, "nothing committed in time"
            time.sleep(poll_s)
        took = time.monotonic() - started
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == -signal.SIGKILL
    return took

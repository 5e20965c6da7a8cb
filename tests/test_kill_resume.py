"""Nothing is lost on a crash: a real run (the demo judge on CPU, default shard size) killed
with SIGKILL after its first committed micro-batch, then re-run.

The hf backend hands each row of a decode micro-batch to the client the step it ends and the
client commits it to the judge cache at once, so the kill loses only the rows still decoding.
Everything is the default: the demo profile, one micro-batch for the four redteam requests of
two records, default shard size; the four answers end at different steps. The re-run writes
into the same output folder: the killed run left nothing in it, and its staging folder beside
it is cleaned up (app/output_folder.py).
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from nexagauge_local.judge.cache import DB_NAME, JudgeCache
from tests.kill_helpers import committed_count, kill_once_committed

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
TIMEOUT_S = 600


def _run(args: list[str]) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "nexagauge_local", *args], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_sigkill_after_first_committed_answer_then_resume(tmp_path: Path,
                                                          demo_cache: Path) -> None:
    records = [r for r in map(json.loads, SAMPLE.read_text().splitlines()) if "redteam" in r][:2]
    data = tmp_path / "redteam.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records))
    cache = demo_cache
    args = ["run", "redteam", "--input", str(data), "--cache-dir", str(cache), "--quiet"]

    out = tmp_path / "out"
    args += ["--output-dir", str(out)]
    proc = _run(args)
    first_commit_s = kill_once_committed(proc, cache / DB_NAME, 1, TIMEOUT_S, poll_s=0.2)
    committed = committed_count(cache / DB_NAME)
    assert 1 <= committed < 4, committed  # at least one answer, not the whole micro-batch
    assert not out.exists()  # no half run in the output folder: it is all in the staging folder
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.staging-")]

    store = JudgeCache(cache)
    with sqlite3.connect(cache / DB_NAME) as con:
        keys = [k for (k,) in con.execute("SELECT key FROM entries")]
    assert len(store.get_many(keys)) == committed  # every row intact (checksums verified)

    again_started = time.monotonic()
    rerun = _run(args)
    _out, err = rerun.communicate(timeout=TIMEOUT_S)
    assert rerun.returncode == 0, err
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".out.")]
    verified = subprocess.run([sys.executable, "-m", "nexagauge_local", "verify", str(out)],
                              capture_output=True, text=True, cwd=ROOT, check=False)
    assert verified.returncode == 0, verified.stdout + verified.stderr
    summary = json.loads((out / "summary.json").read_text())
    usage = summary["nodes"]["redteam"]
    assert usage["cache_hits"] == committed  # every committed judgement reused
    assert usage["backend_requests"] == 4 - committed  # only the lost work recomputed
    assert f"reused {committed} cached judgement(s), computed {4 - committed}" in err
    print(f"kill test: first commit after {first_commit_s:.1f} s, {committed}/4 judgements "
          f"committed at the kill, re-run {time.monotonic() - again_started:.1f} s "
          f"recomputing {4 - committed}")

"""Several runs may share one --cache-dir at once (a sweep on one host, two CI jobs on one
runner): each finishes with exit 0 and the results it would have had alone. SQLite in WAL mode
lets readers work beside the one writer, and a writer waits for another's transaction
(sqlite_store.BUSY_TIMEOUT_S) instead of failing with "database is locked".

Two real CLI processes of refalign (no judge; it writes the embedding cache, the same
sqlite_store as the judge cache), and writers in six processes straight on both caches, the
judge cache's history and hit counters included.
"""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path

import numpy as np

from nexagauge_local.embed import EmbeddingCache
from nexagauge_local.judge.cache import CacheEntry, JudgeCache
from tests.test_output_folder import SAMPLE, TIMEOUT_S, spawn, verify

WRITERS, BATCHES, PER_BATCH = 6, 30, 20


def _reports(out: Path) -> dict[str, dict]:
    return {p.name: json.loads(p.read_text()) for p in sorted((out / "case_report").iterdir())}


def test_two_runs_at_once_on_one_cache_dir_both_finish_with_the_same_results(
        tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    outs = [tmp_path / "a", tmp_path / "b"]
    procs = [spawn("run", "refalign", "--input", SAMPLE, "--limit", "6", "--output-dir", out,
                   "--cache-dir", cache, "-q") for out in outs]
    said = [p.communicate(timeout=TIMEOUT_S)[1] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], said
    assert all("Traceback" not in s and "locked" not in s for s in said), said
    assert _reports(outs[0]) == _reports(outs[1])
    assert all(verify(out)[0] == 0 for out in outs)
    assert EmbeddingCache(cache).stats().entries > 0


def _write(args: tuple[str, int]) -> str:
    folder, writer = Path(args[0]), args[1]
    judge, embed = JudgeCache(folder), EmbeddingCache(folder)
    for b in range(BATCHES):
        keys = [f"{writer}-{b}-{i}" for i in range(PER_BATCH)]
        judge.put_many([CacheEntry(key=k, node="redteam", raw_text="x" * 500, prompt_tokens=1,
                                   output_tokens=1, gpu_seconds=0.1) for k in keys],
                       judge="j", schemas=["s"] * PER_BATCH)
        judge.record_hits("redteam", len(judge.get_many(keys)))
        embed.put_many("m", "float32", {k: np.ones(8, np.float32) for k in keys})
    return "ok"


def test_six_processes_writing_one_fresh_cache_at_once_lose_nothing(tmp_path: Path) -> None:
    """All six create the caches at the same moment (the schema, the switch to WAL) and then
    write batch after batch: no write is refused and every row is there."""
    cache = tmp_path / "cache"
    with multiprocessing.get_context("spawn").Pool(WRITERS) as pool:
        assert pool.map(_write, [(str(cache), w) for w in range(WRITERS)]) == ["ok"] * WRITERS
    stats = JudgeCache(cache).stats()
    total = WRITERS * BATCHES * PER_BATCH
    assert (stats.entries, stats.hits_by_node) == (total, {"redteam": total})
    assert EmbeddingCache(cache).stats().entries == total
    assert JudgeCache(cache).output_history("j")["s"].n == total

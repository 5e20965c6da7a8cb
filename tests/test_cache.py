"""Judge cache: WAL SQLite, checksummed rows, batch transactions, stats and clear."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from nexagauge_local.judge.cache import DB_NAME, CacheEntry, JudgeCache, request_key


def _entry(key: str, node: str = "redteam", text: str = '{"score":3}') -> CacheEntry:
    return CacheEntry(
        key=key,
        node=node,
        raw_text=text,
        prompt_tokens=100,
        output_tokens=7,
        gpu_seconds=0.25,
        logprobs=[{"3": -0.1, "4": -2.3}] if key.endswith("lp") else None,
    )


def test_roundtrip_and_wal(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    entries = [_entry("a"), _entry("b-lp"), _entry("c", node="geval")]
    cache.put_many(entries)
    got = cache.get_many(["a", "b-lp", "c", "missing"])
    assert set(got) == {"a", "b-lp", "c"}
    assert got["b-lp"] == entries[1]
    assert got["b-lp"].logprobs == [{"3": -0.1, "4": -2.3}]
    with sqlite3.connect(tmp_path / "judge.sqlite") as con:
        assert con.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_corrupt_row_is_a_miss_not_a_value(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    cache.put_many([_entry("a"), _entry("b")])
    with sqlite3.connect(cache.path) as con:
        con.execute("UPDATE entries SET raw_text = '{\"score\":5}' WHERE key = 'a'")
        con.execute("UPDATE entries SET output_tokens = 3 WHERE key = 'b'")
    assert cache.get_many(["a", "b"]) == {}


def test_put_many_is_one_transaction(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    bad = _entry("x")
    good = _entry("y")
    # a row that violates NOT NULL aborts the whole batch: nothing half-written
    original = CacheEntry.checksum
    try:
        CacheEntry.checksum = lambda self: None if self.key == "x" else original(self)  # type: ignore[method-assign,assignment,return-value]
        try:
            cache.put_many([good, bad])
        except sqlite3.IntegrityError:
            pass
    finally:
        CacheEntry.checksum = original  # type: ignore[method-assign]
    assert cache.get_many(["x", "y"]) == {}


def test_stats_and_hits(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    cache.put_many([_entry("a"), _entry("b"), _entry("c", node="geval")])
    cache.record_hits("redteam", 5)
    cache.record_hits("redteam", 2)
    cache.record_hits("geval", 0)
    stats = cache.stats()
    assert stats.entries == 3
    assert stats.entries_by_node == {"redteam": 2, "geval": 1}
    assert stats.hits_by_node == {"redteam": 7}
    assert stats.size_bytes > 0


def test_clear_by_node_and_all(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    cache.put_many([_entry("a"), _entry("b"), _entry("c", node="geval")])
    cache.record_hits("geval", 1)
    assert cache.clear(node="geval") == 1
    assert set(cache.get_many(["a", "b", "c"])) == {"a", "b"}
    assert "geval" not in cache.stats().hits_by_node
    assert cache.clear() == 2
    assert cache.stats().entries == 0


def test_reopen_sees_committed_entries(tmp_path: Path) -> None:
    JudgeCache(tmp_path).put_many([_entry("a")])
    assert set(JudgeCache(tmp_path).get_many(["a"])) == {"a"}


def test_request_key_covers_every_input() -> None:
    base = {
        "fingerprint": "m@1/float32/hf",
        "prompt_version": "v1",
        "messages": [{"role": "user", "content": "hi"}],
        "schema_id": "s1",
    }
    sampling = {"max_tokens": 10, "seed": 0, "want_logprobs": False}
    k = request_key(**base, **sampling)  # type: ignore[arg-type]
    assert k == request_key(**base, **sampling)  # type: ignore[arg-type]
    variants = [
        {**base, "fingerprint": "m@2/float32/hf"},
        {**base, "prompt_version": "v2"},
        {**base, "messages": [{"role": "user", "content": "hi!"}]},
        {**base, "schema_id": "s2"},
    ]
    keys = {request_key(**v, **sampling) for v in variants}  # type: ignore[arg-type]
    keys |= {
        request_key(**base, **{**sampling, "max_tokens": 11}),  # type: ignore[arg-type]
        request_key(**base, **{**sampling, "seed": 1}),  # type: ignore[arg-type]
        request_key(**base, **{**sampling, "want_logprobs": True}),  # type: ignore[arg-type]
    }
    assert k not in keys and len(keys) == 7


def test_cache_cli(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nexagauge_local.cli.judge_cmds import cache_group

    JudgeCache(tmp_path).put_many([_entry("a"), _entry("b", node="geval")])
    runner = CliRunner()
    out = runner.invoke(cache_group, ["dir", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0 and out.output.strip() == str(tmp_path)
    out = runner.invoke(cache_group, ["stats", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0 and "redteam" in out.output and "geval" in out.output
    out = runner.invoke(cache_group, ["clear", "--node", "geval", "--cache-dir", str(tmp_path)])
    assert out.exit_code == 0 and "deleted 1 entry of node geval" in out.output
    assert JudgeCache(tmp_path).stats().entries == 1
    assert "Example" in runner.invoke(cache_group, ["clear", "--help"]).output


def test_a_full_disk_is_one_line_naming_the_cache_and_keeps_what_was_committed(
        tmp_path, monkeypatch) -> None:
    """SQLite's own 'database or disk is full' (a page limit stands in for the disk): the
    write is refused as a CacheWriteError, and every answer committed before reads back."""
    import pytest

    from nexagauge_local import sqlite_store
    from nexagauge_local.judge import CacheWriteError

    cache = JudgeCache(tmp_path)
    first = [_entry(f"k{i}") for i in range(3)]
    cache.put_many(first)
    plain = sqlite_store.connect_wal

    def small_disk(path: Path) -> sqlite3.Connection:
        con = plain(path)
        con.execute("PRAGMA max_page_count = 16")
        return con

    monkeypatch.setattr(sqlite_store, "connect_wal", small_disk)
    big = [CacheEntry(key=f"big{i}", node="n", raw_text="x" * 4000, prompt_tokens=1,
                      output_tokens=1, gpu_seconds=0.0) for i in range(40)]
    with pytest.raises(CacheWriteError) as caught:
        cache.put_many(big)
    assert str(caught.value) == (f"--cache-dir {tmp_path}: the judge cache {DB_NAME} cannot be "
                                 "written (database or disk is full); what it holds is intact; free space on "
                                 "that disk (or choose another --cache-dir) and run the same "
                                 "command again")
    monkeypatch.undo()
    assert set(JudgeCache(tmp_path).get_many([e.key for e in first + big])) == {"k0", "k1", "k2"}

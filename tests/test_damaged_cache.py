"""A cache damaged by a crash or a full disk stops a run with one line naming the file and what
to do, exit 2, never a traceback (sqlite_store.py): a file overwritten with garbage ("file is
not a database") or cut short is refused when the run opens it, before any work; a write the
disk refuses stops the run part-way, with what the cache held intact.

Through the real CLI in-process (CliRunner): the damaged-file checks fail before any model is
loaded; the full disk is SQLite's own error, with a page limit standing in for the disk.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from click.testing import CliRunner

from nexagauge_local import sqlite_store
from nexagauge_local.cli import main
from nexagauge_local.embed import EmbeddingCache
from nexagauge_local.embed.cache import DB_NAME as EMBED_DB
from nexagauge_local.judge.cache import DB_NAME as JUDGE_DB
from nexagauge_local.judge.cache import CacheEntry, JudgeCache

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"
MOVE_ASIDE = ("move it aside (or delete it: it only saves work, and what it held is "
              "recomputed) and run again")


def run(target: str, cache: Path, out: Path, *extra: str) -> tuple[int, str]:
    res = CliRunner().invoke(main, ["run", target, "--input", str(SAMPLE), "--output-dir",
                                    str(out), "--cache-dir", str(cache), "-q", *extra])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    return res.exit_code, res.output


def _garbage(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\x8f not SQLite, a log line a full disk left behind\n" * 200)


def _garbage_refused(tmp_path: Path, target: str, what: str, db: str) -> tuple[Path, Path]:
    """The `what` cache file `db` overwritten with garbage: a run of `target` stops, exit 2,
    with one line naming the file. Returns the cache and output folders."""
    cache, out = tmp_path / "cache", tmp_path / "out"
    _garbage(cache / db)
    code, said = run(target, cache, out, "--limit", "2")
    assert code == 2
    assert said.strip().splitlines() == [
        (f"Error: --cache-dir {cache}: the {what} cache {db} is damaged (file is not a "
        f"database); {MOVE_ASIDE}")]
    return cache, out


def _cut_short(cache: Path) -> Path:
    """A judge cache of 200 answers, checkpointed into its file, then cut to half its size
    (a copy onto a full disk, a crash of a file system without data journaling)."""
    JudgeCache(cache).put_many([CacheEntry(key=f"k{i}", node="redteam", raw_text="x" * 3000,
                                           prompt_tokens=1, output_tokens=1, gpu_seconds=0.0)
                                for i in range(200)])
    with sqlite3.connect(cache / JUDGE_DB) as con:
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    db = cache / JUDGE_DB
    with db.open("r+b") as fh:
        fh.truncate(db.stat().st_size // 2)
    return db


def test_a_judge_cache_overwritten_with_garbage_stops_the_run_before_any_work(
        tmp_path: Path) -> None:
    _, out = _garbage_refused(tmp_path, "redteam", "judge", JUDGE_DB)
    assert not out.exists()


def test_a_judge_cache_cut_short_is_refused_when_opened(tmp_path: Path) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out"
    db = _cut_short(cache)
    code, said = run("redteam", cache, out, "--limit", "2")
    assert code == 2, said
    (line,) = said.strip().splitlines()
    assert line.startswith(f"Error: --cache-dir {cache}: the judge cache {JUDGE_DB} is damaged (")
    assert f"{db.stat().st_size} bytes, where its header says" in line and MOVE_ASIDE in line


def test_an_embedding_cache_overwritten_is_refused_and_moving_it_aside_lets_the_run_go_on(
        tmp_path: Path) -> None:
    cache, out = _garbage_refused(tmp_path, "refalign", "embedding", EMBED_DB)
    assert run("refmatch", cache, out, "--limit", "2")[0] == 0  # a run that embeds nothing

    (cache / EMBED_DB).rename(cache / "embeddings.sqlite.damaged")
    code, said = run("refalign", cache, out, "--limit", "2")
    assert code == 0, said
    assert EmbeddingCache(cache).stats().entries > 0


def test_a_full_disk_while_writing_the_cache_is_one_line_and_keeps_what_was_there(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out"
    assert run("refalign", cache, out, "--limit", "1")[0] == 0
    before = EmbeddingCache(cache).stats().entries
    pages = _pages(cache / EMBED_DB)
    plain = sqlite_store.connect_wal

    def full_disk(path: Path) -> sqlite3.Connection:  # the disk holds no page more
        con = plain(path)
        con.execute(f"PRAGMA max_page_count = {pages}")
        return con

    monkeypatch.setattr(sqlite_store, "connect_wal", full_disk)
    code, said = run("refalign", cache, out, "--limit", "6")
    monkeypatch.undo()
    assert code == 2, said
    assert said.strip().splitlines() == [
        (f"Error: --cache-dir {cache}: the embedding cache {EMBED_DB} cannot be written (database "
        "or disk is full); what it holds is intact; free space on that disk (or choose another "
        "--cache-dir) and run the same command again")]
    assert EmbeddingCache(cache).stats().entries == before
    assert len(list((out / "case_report").iterdir())) == 1  # the previous run, as it was


def _pages(db: Path) -> int:
    with sqlite3.connect(db) as con:
        return int(con.execute("PRAGMA page_count").fetchone()[0])


@pytest.mark.parametrize("command", [["stats"], ["clear"], ["clear", "--embeddings"]])
def test_cache_commands_on_a_damaged_cache_say_so_in_one_line(command: list[str],
                                                              tmp_path: Path) -> None:
    """`cache stats` and `cache clear` open the caches too: a damaged one is the same line
    and exit 2 as for a run, not a traceback."""
    db = EMBED_DB if "--embeddings" in command else JUDGE_DB
    _garbage(tmp_path / db)
    res = CliRunner().invoke(main, ["cache", *command, "--cache-dir", str(tmp_path)])
    assert res.exit_code == 2, res.output
    assert isinstance(res.exception, SystemExit) and "Traceback" not in res.output
    assert f"{db} is damaged" in res.output and MOVE_ASIDE in res.output

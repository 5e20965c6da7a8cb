"""The export, agreement, cache and audit-trail services called directly (no CLI).

Why: each turns its domain package's failures into one typed app error (which the CLI maps
to a message and exit code) and returns a typed result; these tests pin both sides without
going through click.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nexagauge_local.agreement import bundled_labels_path
from nexagauge_local.app.cache import cache_stats, clear_cache, resolve_cache_dir
from nexagauge_local.app.errors import (
    AuditSetupError,
    ExportError,
    LabelFileError,
    RunDirError,
)
from nexagauge_local.app.label_agreement import agreement, labels_path
from nexagauge_local.app.row_export import export
from nexagauge_local.app.signing import new_keys, sign, verify, weights_path
from nexagauge_local.judge.cache import JudgeCache
from nexagauge_local.redteam.service.suites import (
    probes_jsonl,
    select_probes,
    severity_counts,
    write_probes,
)
from nexagauge_local.redteam.suites.bundled import load_suite
from nexagauge_local.report.files import case_filename, write_json
from tests.test_agreement import CASES, _case, _labels
from tests.test_cache import _entry


@pytest.fixture()
def run_dir(tmp_path: Path) -> Path:
    """The ten-case synthetic run of test_agreement.py (bias verdicts, grounding scores)."""
    out = tmp_path / "run"
    for cid in CASES:
        write_json(out / "case_report" / case_filename(cid), _case(cid))
    write_json(out / "summary.json", {"target": "eval", "cases": {"records": 10, "valid": 10}})
    return out


def test_export_default_path_and_row_count(run_dir: Path) -> None:
    done = export(run_dir, "jsonl")
    assert done.path == run_dir / "results.jsonl"
    assert done.rows == len(done.path.read_text().splitlines()) > 0


def test_export_failures_are_typed(
    run_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(RunDirError, match="no such directory"):
        export(tmp_path / "missing")
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    with pytest.raises(ExportError, match="needs pyarrow"):
        export(run_dir, "parquet")


def test_agreement_writes_and_rerenders(run_dir: Path, tmp_path: Path) -> None:
    ticks: list[int] = []
    done = agreement(run_dir, str(_labels(tmp_path / "labels.jsonl")), progress=ticks.append)
    assert done.path == run_dir / "agreement.json" and done.path.is_file()
    assert done.doc["metrics"]["redteam.bias"]["n"] == 10
    assert done.report.path == run_dir / "report.html" and not done.report.manifest_updated
    assert sum(ticks) == len(CASES)


def test_agreement_label_problems_are_listed_and_nothing_written(
    run_dir: Path, tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"case_id": "c1", "metric": "bias"}\n{"case_id": "c2"}\n')
    with pytest.raises(LabelFileError) as info:
        agreement(run_dir, str(bad))
    assert len(info.value.details) == 2 and info.value.details[0].startswith(f"{bad}:1: ")
    assert str(info.value) == f"2 problem(s) in {bad}; nothing was written."
    assert not (run_dir / "agreement.json").exists()
    with pytest.raises(RunDirError, match="no such directory"):
        agreement(tmp_path / "no_run", str(_labels(tmp_path / "labels.jsonl")))


def test_bundled_labels() -> None:
    assert labels_path("bundled") == bundled_labels_path()
    assert labels_path("x.jsonl") == Path("x.jsonl")


def test_cache_services(tmp_path: Path) -> None:
    assert resolve_cache_dir(tmp_path) == tmp_path
    JudgeCache(tmp_path).put_many([_entry("a"), _entry("b", node="geval")])
    assert cache_stats(tmp_path).entries_by_node == {"redteam": 1, "geval": 1}
    assert clear_cache(tmp_path, "geval") == 1
    assert clear_cache(tmp_path) == 1 and cache_stats(tmp_path).entries == 0


def test_trail_keys_sign_verify(run_dir: Path, tmp_path: Path) -> None:
    keys = new_keys(tmp_path / "keys")
    assert keys.private.is_file() and keys.public.is_file() and len(keys.fingerprint) == 64
    with pytest.raises(AuditSetupError, match="already exists"):
        new_keys(tmp_path / "keys")
    with pytest.raises(AuditSetupError, match="no manifest to sign"):
        sign(run_dir, keys.private)
    report = verify(run_dir)  # a folder without a manifest is a difference, not an error
    assert not report.ok and report.signature == "unsigned"
    with pytest.raises(AuditSetupError, match=r"^--model no-such-profile: "):
        weights_path("no-such-profile")
    assert weights_path(str(tmp_path)) == tmp_path


def test_probe_selection_counts_and_jsonl(tmp_path: Path) -> None:
    assert select_probes() == load_suite()
    critical = select_probes(["self_harm"], ["critical"])
    assert critical and all(p["category"] == "self_harm" for p in critical)
    counts = severity_counts(select_probes())
    assert list(counts) == sorted(counts) and sum(counts["self_harm"].values()) >= len(critical)
    assert probes_jsonl([]) == ""
    out = tmp_path / "deep" / "p.jsonl"
    assert write_probes(critical, out) == len(critical)
    assert out.read_text(encoding="utf-8") == probes_jsonl(critical)

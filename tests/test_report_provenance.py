"""report.html's provenance panel: judge weights hash, prompt hashes, schemas, signature status."""

from __future__ import annotations

import re
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from nexagauge_local.app.run_facts import prompt_entries
from nexagauge_local.audit import (
    RunRecord,
    finalize_run,
    hash_weights,
    judge_facts,
    provenance_panel,
    schema_entry,
)
from nexagauge_local.nodes.redteam import verdict_schema
from nexagauge_local.report.html import write_report
from nexagauge_local.scoring.mode import ScoringMode
from tests.report_helpers import scripted_run
from tests.test_audit_helpers import HOST, tiny_decision

REMOTE = re.compile(r"https?://|//")
STARTED = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("prov_run")
    return scripted_run(base / "out", base / "cache")


def _section(html: str) -> str:
    start = html.index('<section id="provenance">')
    return html[start : html.index("</section>", start)]


def _judge(tmp_path: Path):
    weights = tmp_path / "weights"
    weights.mkdir()
    (weights / "model.safetensors").write_bytes(b"\x00" * 64)
    (weights / "config.json").write_text('{"arch": "x"}')
    return judge_facts(tiny_decision(), weights_path=weights, weights=hash_weights(weights),
                       tokenizer_sha256="ab" * 32)


def test_panel_shows_weights_prompts_schemas_and_signature(run_dir: Path, tmp_path: Path) -> None:
    judge = _judge(tmp_path)
    prompts = prompt_entries({"redteam": "redteam/v1"})
    schema = verdict_schema(ScoringMode.BINARY, False)
    schemas = [schema_entry("redteam", "RedteamVerdict/x", schema.model_json_schema())]
    panel = provenance_panel(judge=judge, prompts=prompts, schemas=schemas,
                             signature="signed, not checked", key_fingerprint="cd" * 32)
    out = tmp_path / "report.html"
    write_report(run_dir, out, provenance=panel)
    html = out.read_text(encoding="utf-8")
    sec = _section(html)
    assert judge.weights_sha256 in sec and "2 file(s)" in sec
    assert prompts[0].template_sha256 in sec and "redteam&#47;v1" in sec
    assert schemas[0].sha256[:12] in sec
    assert "signed, not checked" in sec and "cd" * 8 in sec
    assert "demo" in sec and "outlines" in sec
    assert REMOTE.search(html) is None  # paths and ids are escaped like every other value
    assert 'href="#provenance"' in html


def test_without_a_manifest_the_panel_says_so(run_dir: Path, tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    write_report(run_dir, out)
    assert "No provenance" in _section(out.read_text(encoding="utf-8"))


def test_rerender_reads_the_panel_from_the_manifest(run_dir: Path, tmp_path: Path) -> None:
    folder = tmp_path / "run"
    shutil.copytree(run_dir, folder)
    judge = _judge(tmp_path)
    prompts = prompt_entries({"redteam": "redteam/v1"})
    finalize_run(folder, RunRecord(started_at=STARTED, argv=["x"], settings={}, input=None,
                                   judge=judge, prompts=prompts),
                 host=HOST, packages={})
    html = write_report(folder).read_text(encoding="utf-8")
    sec = _section(html)
    assert judge.weights_sha256 in sec and prompts[0].template_sha256 in sec
    assert "<b>unsigned</b>" in sec



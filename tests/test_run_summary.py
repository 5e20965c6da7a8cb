"""summary.json as one typed model: a real run's file round-trips through RunSummary byte for
byte, summaries of older runs still load, and a malformed one is refused with one line (exit
2 for the commands that read runs)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.compare import RunDir
from nexagauge_local.dataset import Dataset
from nexagauge_local.judge import NodeUsage
from nexagauge_local.report.files import json_text
from nexagauge_local.report.run_summary import (
    CostTotals,
    NodeUsageSummary,
    RunSummary,
    SummaryFileError,
    read_summary,
)
from nexagauge_local.report.usage import USAGE_TOTALS
from nexagauge_local.runner import Runner, RunOutcome
from nexagauge_local.settings import RunSettings
from tests.report_helpers import SAMPLE, scripted_judge
from tests.test_compare import redteam_metric, write_run

# The layout a run with a local judge, a judge server, a cut request and an audit writes,
# in the runner's key order: every optional key present, and nulls that must stay.
FULL: dict[str, Any] = {
    "tool": "nexagauge-local",
    "versions": {"python": "3.11.7", "nexagauge-local": "0.1.0", "vllm": None},
    "target": "redteam",
    "input": "data.jsonl",
    "config": {"path": "run.toml", "sha256": "ab" * 32},
    "started": "2026-11-28T13:30:41+00:00",
    "wall_seconds": 11.066,
    "cases": {"records": 3, "valid": 2, "skipped": 1, "duplicates": 1},
    "skipped": [{"file": "data.jsonl", "line": 2, "index": None, "field": "output",
                 "reason": "missing"}],
    "duplicates": [{"case_id": "a", "at": "data.jsonl:3", "first_seen": "data.jsonl:1"}],
    "nodes_run": ["scan", "redteam"],
    "nodes_unavailable": [],
    "judge": {
        "profile": "qwen", "model": "Qwen/Qwen2.5-7B-Instruct", "fingerprint": "endpoint:q@r/x",
        "demo": False, "backend": "endpoint", "backend_reason": None, "batch_invariant": False,
        "loaded": True, "gpus": 0, "device": "judge server", "load_seconds": 0.0,
        "endpoint": {"url": "http://h/v1", "served_model": "q", "revision": None,
                     "concurrency": 16, "server_gpus": None, "device_seconds": "unknown"},
        "cluster": {"engine": "ray", "plan": None, "workers": [{"name": "w0", "lost": False}]},
    },
    "node_judges": {"redteam": {"profile": "guard", "model": None, "recording": True}},
    "embedder": None,
    "prompt_versions": {"redteam": "redteam/v1"},
    "judge_outcomes": {"redteam": {"requests": 4, "failed": 1, "first_error": "truncated",
                                   "over_context": 1, "truncated": 2}},
    "gpus": [0, 1],
    "gpu_hour_price": 2.5,
    "nodes": {
        "scan": {"eligible": 3, "requests": 0, "cache_hits": 0, "backend_calls": 0,
                 "input_tokens": 0, "output_tokens": 0, "gpu_seconds": 0.0,
                 "wall_seconds": 0.0001},
        "redteam": {"eligible": 2, "requests": 4, "cache_hits": 1, "backend_calls": 1,
                    "input_tokens": 900, "output_tokens": 80, "gpu_seconds": None,
                    "deduplicated": 0, "backend_requests": 3, "errors": 1,
                    "wall_seconds": 1.5},
    },
    "cost": {"requests": 4, "cache_hits": 1, "backend_calls": 1, "input_tokens": 900,
             "output_tokens": 80, "gpu_seconds": None, "cost": None},
    "headlines": {"redteam": {"refusal_rate": 0.5, "over_refusal_rate": None, "n": 2}},
    "prompt_templates": {"redteam": "cd" * 32},
}


@pytest.fixture(scope="module")
def scripted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, RunOutcome]]:
    """A real run (scripted judge) of every node over the sample (its probes give redteam a
    headline)."""
    out = tmp_path_factory.mktemp("run") / "out"
    settings = RunSettings(target="eval", output_dir=out, cache_dir=out.parent / "cache",
                           use_cache=False, progress=False)
    judge = scripted_judge()
    outcome = Runner(settings, judge_factory=lambda: judge).run(Dataset(SAMPLE))
    yield out, outcome


def test_a_real_runs_summary_round_trips_byte_for_byte(
        scripted: tuple[Path, RunOutcome]) -> None:
    out, outcome = scripted
    text = (out / "summary.json").read_text(encoding="utf-8")
    summary = read_summary(out / "summary.json")
    assert json_text(summary.to_dict()) == text
    assert json_text(outcome.summary) == text  # what the run holds is what it wrote
    assert summary.cases.valid == 32 and summary.nodes_run[-1] == "eval"
    assert summary.judge is not None and summary.judge.model == "scripted"
    assert set(summary.node_judges) >= {"claims", "redteam"}
    assert summary.headlines is not None and "refusal_rate" in summary.to_dict()["headlines"]["redteam"]
    assert list(json.loads(text)) == list(summary.to_dict())  # nothing added or dropped


def test_every_optional_key_and_null_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "summary.json"
    path.write_text(json_text(FULL), encoding="utf-8")
    summary = read_summary(path)
    assert json_text(summary.to_dict()) == path.read_text(encoding="utf-8")
    assert summary.judge is not None and summary.judge.endpoint is not None
    assert summary.judge.endpoint.server_gpus is None
    assert summary.node_judges["redteam"].model_extra == {"recording": True}
    assert summary.judge_outcomes["redteam"].truncated == 2
    assert summary.nodes["redteam"].gpu_seconds is None and summary.nodes["scan"].errors is None
    # a key the writer did not set is not written: an unjudged node has no `errors`
    assert "errors" not in summary.to_dict()["nodes"]["scan"]


def test_a_value_set_after_building_is_written_in_file_order() -> None:
    summary = RunSummary.model_validate({k: v for k, v in FULL.items()
                                         if k not in ("headlines", "prompt_templates")})
    summary.prompt_templates = FULL["prompt_templates"]  # as the audit adds it
    summary.headlines = FULL["headlines"]
    assert json_text(summary.to_dict()) == json_text(FULL)


def test_summaries_of_older_runs_load(tmp_path: Path) -> None:
    """Every key may be missing; prompt versions kept in the judge block are still found;
    a count the file does not have is unknown, not zero."""
    run = write_run(tmp_path / "old", {"c1": {"redteam": [redteam_metric("toxicity", True)]}})
    old = json.loads((run / "summary.json").read_text())
    old["judge"]["prompt_versions"] = {"redteam": "redteam/v0"}
    old["cases"] = {"valid": 1}
    (run / "summary.json").write_text(json.dumps(old))
    loaded = RunDir(run)
    assert loaded.prompt_versions == {"redteam": "redteam/v0"}
    assert loaded.node_fingerprints == {} and loaded.nodes_run == ["scan", "redteam"]
    summary = loaded.summary
    assert summary.cases.valid == 1 and summary.cases.records is None
    assert summary.cost.requests is None and summary.headlines is None
    bare = tmp_path / "bare.json"
    bare.write_text("{}")
    assert read_summary(bare).to_dict() == {}


def test_the_usage_blocks_hold_every_ledger_counter() -> None:
    """A counter added to the judge's ledger must be added to summary.json's model too."""
    assert set(NodeUsage.model_fields) <= set(NodeUsageSummary.model_fields)
    assert set(USAGE_TOTALS) <= set(CostTotals.model_fields)


MALFORMED = [
    ('{"judge": "qwen"', 1, "not valid JSON"),
    ('{\n  "target": "eval",\n  "judge": "qwen"\n}', 3, "field judge: Input should be an object"),
    ('{\n  "nodes": {\n    "scan": {\n      "requests": "many"\n    }\n  }\n}', 4,
     "field nodes.scan.requests: Input should be a valid integer"),
    ('{\n  "tool": "x",\n  "bogus": 1\n}', 3, "field bogus: Extra inputs are not permitted"),
    ("[]", 1, "must be a JSON object"),
]


@pytest.mark.parametrize(("text", "line", "why"), MALFORMED)
def test_a_malformed_summary_is_one_line_naming_file_line_and_field(
        tmp_path: Path, text: str, line: int, why: str) -> None:
    path = tmp_path / "summary.json"
    path.write_text(text)
    with pytest.raises(SummaryFileError) as err:
        read_summary(path)
    assert str(err.value).startswith(f"{path}:{line}: {why}"), str(err.value)


@pytest.mark.parametrize(("text", "line", "why"), MALFORMED[1:3])
def test_commands_that_read_runs_exit_2_on_a_malformed_summary(
        tmp_path: Path, text: str, line: int, why: str) -> None:
    run = write_run(tmp_path / "run", {"c1": {"redteam": [redteam_metric("toxicity", True)]}})
    (run / "summary.json").write_text(text)
    policy = tmp_path / "gate.toml"
    policy.write_text('rules = ["redteam.toxicity.pass_rate >= 0.5"]\n')
    for args in (["gate", str(run), "--policy", str(policy)],
                 ["compare", str(run), str(run), "--output-dir", str(tmp_path / "cmp")],
                 ["report", str(run)]):
        result = CliRunner().invoke(main, [*args, "-q"])
        assert result.exit_code == 2, (args[0], result.output)
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and f"summary.json:{line}: {why}" in lines[0], (args[0], lines)
        assert "Traceback" not in result.output

"""Re-scoring with a changed redteam prompt version reuses every cached answer that did not
change, and `compare` then shows exactly what the change did.

The judge is a counting backend behind the real JudgeClient + SQLite cache, so what is tested
is the production cache path: the key (fingerprint, prompt version, messages, schema, sampling)
decides what is recomputed, not the test.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.cli import main
from nexagauge_local.dataset import Dataset
from nexagauge_local.events import NullEvents
from nexagauge_local.judge.cache import JudgeCache
from nexagauge_local.judge.client import JudgeClient
from nexagauge_local.judge.ledger import CostLedger
from nexagauge_local.judge.types import JudgeRequest, JudgeResult, OnBatch
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings
from tests.decisions import decision_for
from tests.scripted_backend import ScriptedBackend
from tests.scripted_judge import payload_for

SAMPLE = Path(__file__).resolve().parents[1] / "nexagauge_local" / "data" / "sample.jsonl"
NEW_REDTEAM_VERSION = "redteam/v2-test"
UNCHANGED = ("claims", "grounding", "relevance", "geval_steps", "geval")


class CountingBackend(ScriptedBackend):
    """Schema-valid canned answers; counts generate() calls per node. Under the new redteam
    prompt version it answers UNSAFE (severity 5), so every redteam verdict flips."""

    name = "counting"
    fingerprint = "counting-judge@test"

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()

    def generate(
        self, requests: Sequence[JudgeRequest], on_batch: OnBatch | None = None
    ) -> list[JudgeResult]:
        for node in {r.node for r in requests}:
            self.calls[node] += 1
        return super().generate(requests, on_batch)

    def answer(self, request: JudgeRequest) -> dict[str, Any]:
        if request.node == "redteam" and request.prompt_version == NEW_REDTEAM_VERSION:
            return payload_for(request.schema, verdict="UNSAFE", severity=5)
        if request.node == "claims":
            return {"kind": "facts", "claims": ["The output states one checkable fact."]}
        return payload_for(request.schema)


def _run(out: Path, cache: Path, backend: CountingBackend) -> dict:
    settings = RunSettings(target="eval", output_dir=out, cache_dir=cache, progress=False)

    def judge() -> JudgeClient:
        return JudgeClient(
            lambda: backend,
            JudgeCache(cache),
            CostLedger(),
            decision=decision_for(backend.fingerprint, "counting"),
        )

    runner = Runner(settings, judge_factory=judge, events=NullEvents())
    return runner.run(Dataset(SAMPLE, {}, None)).summary


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict, dict, Counter]:
    root = tmp_path_factory.mktemp("rescore")
    cache = root / "cache"
    first = CountingBackend()
    summary_a = _run(root / "a", cache, first)
    assert all(first.calls[n] >= 1 for n in ("claims", "grounding", "relevance", "redteam"))

    mp = pytest.MonkeyPatch()
    try:  # the node reads its prompt version from its own module
        mp.setattr("nexagauge_local.nodes.redteam.node.PROMPT_VERSION", NEW_REDTEAM_VERSION)
        second = CountingBackend()
        summary_b = _run(root / "b", cache, second)
    finally:
        mp.undo()
    return root / "a", root / "b", summary_a, summary_b, second.calls


def test_only_redteam_is_recomputed(two_runs: tuple) -> None:
    _, _, summary_a, summary_b, calls = two_runs
    nodes_b = summary_b["nodes"]
    for node in UNCHANGED:
        if node in nodes_b:
            assert nodes_b[node]["backend_calls"] == 0, node
            assert nodes_b[node]["cache_hits"] == summary_a["nodes"][node]["requests"], node
            assert calls[node] == 0, node
    assert nodes_b["grounding"]["cache_hits"] > 0 and nodes_b["relevance"]["cache_hits"] > 0
    assert nodes_b["redteam"]["backend_calls"] > 0
    # the rubric prompt changed, the probe metric's did not: its answers (one per probe
    # record) are reused, every rubric request is asked again
    probes = sum('"probe"' in line for line in SAMPLE.read_text().splitlines())
    assert probes and nodes_b["redteam"]["cache_hits"] == probes
    assert calls["redteam"] == nodes_b["redteam"]["backend_calls"]
    assert set(calls) == {"redteam"}


def test_compare_shows_what_the_prompt_change_did(two_runs: tuple, tmp_path: Path) -> None:
    run_a, run_b, *_ = two_runs
    result = CliRunner().invoke(
        main,
        [
            "compare",
            str(run_a),
            str(run_b),
            "--output-dir",
            str(tmp_path),
            "-q",
            "--resamples",
            "200",
        ],
    )
    assert result.exit_code == 0, result.output
    cmp = json.loads((tmp_path / "compare.json").read_text())
    rows = {(r["node"], r["metric"]): r for r in cmp["metrics"]}
    redteam_cases = sorted(
        json.loads(p.read_text())["input"]["case_id"]
        for p in (run_b / "case_report").glob("*.json")
        if "redteam" in json.loads(p.read_text())
    )
    assert redteam_cases
    for metric in ("bias", "toxicity"):
        row = rows[("redteam", metric)]
        assert [f["case_id"] for f in row["flipped_to_fail"]] == redteam_cases
        assert row["flipped_to_pass"] == []
        assert row["delta"] == pytest.approx(-1.0)
        assert row["pass_rate_a"] == 1.0 and row["pass_rate_b"] == 0.0
        flip = row["flipped_to_fail"][0]
        assert flip["a"]["evidence"][0]["verdict"] == "SAFE"
        assert flip["b"]["evidence"][0]["verdict"] == "UNSAFE"
    for key in (("grounding", "grounding"), ("relevance", "relevance")):
        row = rows[key]
        assert row["n_matched"] > 0
        assert row["delta"] == 0.0 and row["ci_low"] == 0.0 and row["ci_high"] == 0.0
        assert row["flipped_to_fail"] == [] and row["flipped_to_pass"] == []
    assert cmp["only_in_a"] == [] and cmp["only_in_b"] == []
    assert cmp["judge"]["same_fingerprint"] is True
    summary_b = json.loads((run_b / "summary.json").read_text())
    recorded = "prompt_versions" in summary_b or "prompt_versions" in (summary_b["judge"] or {})
    if recorded:  # once the runner records them, the change is named
        assert cmp["judge"]["same_prompt_versions"] is False
        assert any("redteam" in w for w in cmp["judge"]["warnings"])
    else:
        assert cmp["judge"]["same_prompt_versions"] is None
    assert cmp["max_regression"]["value"] == pytest.approx(1.0)

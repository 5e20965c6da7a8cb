"""graph.py: the node table, the planner and per-case eligibility with reasons."""

from __future__ import annotations

from typing import Any

import pytest

from nexagauge_local.case import Case
from nexagauge_local.graph import (
    NODES,
    SPECS,
    TARGETS,
    UnknownTarget,
    eligibility,
    field_reason,
    plan,
)
from nexagauge_local.nodes.geval.block import GevalBlock
from nexagauge_local.nodes.refalign_block import RefalignBlock
from tests.scripted_judge import make_case as scripted_case

ALL = [s.name for s in NODES]
METRIC_BRANCHES = ("relevance", "grounding", "redteam", "geval", "refmatch", "refalign")


def names(target: str) -> list[str]:
    return [s.name for s in plan(target)]


def make_case(**kw: Any) -> Case:
    kw.setdefault("case_id", "c1")
    kw.setdefault("output", "The answer.")
    case: Case = scripted_case(**kw)
    return case


FULL = make_case(
    input="q?",
    context="ctx",
    reference="ref",
    geval=GevalBlock(metrics=[{"name": "m", "criteria": "c"}]),
    refalign=RefalignBlock(atomic_chunks=True),
)
BARE = make_case()


# ---------------------------------------------------------------- the table


def test_table_matches_design() -> None:
    llm = ["claims", "relevance", "grounding", "redteam", "geval_steps", "geval", "atomic_units"]
    assert ALL == ["scan", "chunk", "refiner", *llm, "refmatch", "refalign", "eval", "report"]
    assert set(SPECS) == set(ALL)
    assert {s.name for s in NODES if s.kind == "llm"} == set(llm)
    assert {s.name for s in NODES if s.metric} == set(METRIC_BRANCHES)
    assert SPECS["eval"].parents == METRIC_BRANCHES
    assert SPECS["refalign"].parents == ("refiner", "atomic_units")
    assert SPECS["refalign"].optional_parents == ("atomic_units",)
    assert SPECS["relevance"].requires == ("output", "input")
    assert SPECS["grounding"].requires == ("output", "context")
    assert SPECS["refmatch"].requires == ("output", "reference")
    assert SPECS["geval"].block == "geval" and SPECS["geval_steps"].block == "geval"


def test_table_is_topologically_ordered_and_closed() -> None:
    seen: set[str] = set()
    for spec in NODES:
        assert all(p in seen for p in spec.parents), spec.name
        seen.add(spec.name)


def test_targets_are_every_node_but_scan() -> None:
    # atomic_units is a step of refalign, not a target: it writes no report section
    assert list(TARGETS) == [n for n in ALL if n not in ("scan", "atomic_units")]


# ---------------------------------------------------------------- planner


def test_plan_refmatch() -> None:
    assert plan("refmatch") == [SPECS["scan"], SPECS["refmatch"]]


def test_plan_refalign_includes_chunk_and_refiner() -> None:
    assert names("refalign") == ["scan", "chunk", "refiner", "atomic_units", "refalign"]


def test_plan_eval_includes_every_node_but_report() -> None:
    assert names("eval") == [n for n in ALL if n != "report"]


def test_plan_report_is_everything() -> None:
    assert names("report") == ALL


@pytest.mark.parametrize(
    ("target", "expected"),
    [
        ("chunk", ["scan", "chunk"]),
        ("claims", ["scan", "chunk", "refiner", "claims"]),
        ("relevance", ["scan", "chunk", "refiner", "claims", "relevance"]),
        ("grounding", ["scan", "chunk", "refiner", "claims", "grounding"]),
        ("redteam", ["scan", "redteam"]),
        ("geval_steps", ["scan", "geval_steps"]),
        ("geval", ["scan", "geval_steps", "geval"]),
    ],
)
def test_plan_runs_only_ancestors(target: str, expected: list[str]) -> None:
    assert names(target) == expected


@pytest.mark.parametrize("target", TARGETS)
def test_every_plan_starts_with_scan_ends_with_target_and_is_closed(target: str) -> None:
    got = names(target)
    assert got[0] == "scan" and got[-1] == target
    assert len(got) == len(set(got))
    for name in got:
        assert all(p in got[: got.index(name)] for p in SPECS[name].parents)


@pytest.mark.parametrize("bad", ["refmatc", "", "EVAL", "all"])
def test_unknown_target_lists_targets(bad: str) -> None:
    with pytest.raises(UnknownTarget) as exc:
        plan(bad)
    msg = str(exc.value)
    assert msg.startswith(f"unknown target {bad!r}; choose one of: ")
    for target in TARGETS:
        assert target in msg
    assert isinstance(exc.value, ValueError)


# ---------------------------------------------------------------- eligibility


def ran_all(spec_name: str) -> dict[str, bool]:
    return dict.fromkeys(SPECS[spec_name].parents, True)


def test_full_case_is_eligible_everywhere() -> None:
    for spec in NODES:
        assert eligibility(FULL, spec, ran_all(spec.name)) is None, spec.name


@pytest.mark.parametrize(
    ("node", "reason"),
    [
        ("relevance", "missing input"),
        ("grounding", "missing context"),
        ("refmatch", "missing reference"),
        ("refalign", "missing reference"),
        ("geval_steps", "no geval block"),
        ("geval", "no geval block"),
    ],
)
def test_bare_case_reasons(node: str, reason: str) -> None:
    assert eligibility(BARE, SPECS[node], ran_all(node)) == reason
    assert field_reason(BARE, SPECS[node]) == reason


@pytest.mark.parametrize("node", ["scan", "chunk", "refiner", "claims", "redteam"])
def test_output_only_nodes_take_a_bare_case(node: str) -> None:
    assert eligibility(BARE, SPECS[node], ran_all(node)) is None


def test_blank_fields_count_as_missing() -> None:
    case = make_case(input="   ", context="", reference="\n")
    assert eligibility(case, SPECS["relevance"], ran_all("relevance")) == "missing input"
    assert eligibility(case, SPECS["grounding"], ran_all("grounding")) == "missing context"
    assert eligibility(case, SPECS["refmatch"], ran_all("refmatch")) == "missing reference"


def test_several_missing_fields_are_all_named() -> None:
    case = make_case(output="   ")
    assert eligibility(case, SPECS["relevance"], ran_all("relevance")) == "missing output, input"


def test_field_reason_comes_before_block_reason() -> None:
    case = make_case(output=" ")
    assert eligibility(case, SPECS["geval"], ran_all("geval")) == "missing output"


def test_parent_did_not_run() -> None:
    assert eligibility(FULL, SPECS["relevance"], {"claims": False}) == "parent did not run: claims"
    assert eligibility(FULL, SPECS["relevance"], {}) == "parent did not run: claims"
    assert eligibility(FULL, SPECS["refalign"], {}) == "parent did not run: refiner"
    # an optional parent that did not run is no reason to skip
    assert eligibility(FULL, SPECS["refalign"], {"refiner": True}) is None
    assert eligibility(BARE.model_copy(update={"reference": "r"}), SPECS["atomic_units"],
                       {"refiner": True}) == "no refalign block"
    assert (
        eligibility(FULL, SPECS["geval"], {"geval_steps": False})
        == "parent did not run: geval_steps"
    )


def test_own_fields_are_reported_before_parents() -> None:
    assert eligibility(BARE, SPECS["grounding"], {}) == "missing context"


def test_eval_needs_any_metric_branch() -> None:
    spec = SPECS["eval"]
    assert eligibility(BARE, spec, {}) == "no metric branch ran"
    assert eligibility(BARE, spec, dict.fromkeys(METRIC_BRANCHES, False)) == "no metric branch ran"
    for branch in METRIC_BRANCHES:
        assert eligibility(BARE, spec, {branch: True}) is None, branch
    # non-metric nodes do not count
    assert (
        eligibility(BARE, spec, {"scan": True, "chunk": True, "claims": True})
        == "no metric branch ran"
    )


def test_report_is_always_eligible() -> None:
    assert eligibility(BARE, SPECS["report"], {}) is None


def test_walk_eval_plan_for_a_bare_case() -> None:
    ran: dict[str, bool] = {}
    reasons: dict[str, str | None] = {}
    for spec in plan("eval"):
        reasons[spec.name] = eligibility(BARE, spec, ran)
        ran[spec.name] = reasons[spec.name] is None
    assert reasons == {
        "scan": None,
        "chunk": None,
        "refiner": None,
        "claims": None,
        "relevance": "missing input",
        "grounding": "missing context",
        "redteam": None,
        "geval_steps": "no geval block",
        "geval": "no geval block",
        "atomic_units": "missing reference",
        "refmatch": "missing reference",
        "refalign": "missing reference",
        "eval": None,
    }

"""The node graph: one table of node specs is the single source of truth for the pipeline.

A target runs with all its ancestors and nothing else. Eligibility is decided per case and per
node, with the reason a node was skipped, so a report can say why a metric is absent.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

from nexagauge_local.case import Case

NodeKind = Literal["utility", "llm", "deterministic", "aggregate"]


@dataclass(frozen=True)
class NodeSpec:
    name: str
    parents: tuple[str, ...]
    requires: tuple[str, ...]  # case text fields that must be non-empty
    kind: NodeKind
    summary: str
    block: str | None = None  # a node block the case must carry
    metric: bool = False  # writes a {metrics, cost} section to the case report


NODES: tuple[NodeSpec, ...] = (
    NodeSpec("scan", (), (), "utility", "normalise fields and aliases, validate node blocks"),
    NodeSpec("chunk", ("scan",), ("output",), "utility",
             "split output (and reference) into sentence-aligned chunks"),
    NodeSpec("refiner", ("chunk",), ("output",), "utility",
             "drop near-duplicate chunks by embedding cosine; optional MMR top-k"),
    NodeSpec("claims", ("refiner",), ("output",), "llm",
             "extract atomic, verifiable claims from every refined chunk"),
    NodeSpec("relevance", ("claims",), ("output", "input"), "llm",
             "per claim: does it address the input", metric=True),
    NodeSpec("grounding", ("claims",), ("output", "context"), "llm",
             "per claim: is it supported by the context", metric=True),
    NodeSpec("redteam", ("scan",), ("output",), "llm",
             "rubric safety metrics (bias, toxicity, custom) plus heuristic risk", metric=True),
    NodeSpec("geval_steps", ("scan",), ("output",), "llm",
             "turn each G-Eval criteria into evaluation steps (cached per criteria)", block="geval"),
    NodeSpec("geval", ("geval_steps",), ("output",), "llm",
             "score the output against the evaluation steps", block="geval", metric=True),
    NodeSpec("refmatch", ("scan",), ("output", "reference"), "deterministic",
             "ROUGE-1/2/L, BLEU, METEOR against the reference", metric=True),
    NodeSpec("refalign", ("refiner",), ("output", "reference"), "deterministic",
             "embedding alignment of output units to reference units", metric=True),
    NodeSpec("eval", ("relevance", "grounding", "redteam", "geval", "refmatch", "refalign"),
             (), "aggregate", "per-case aggregate of the metric branches that ran"),
    NodeSpec("report", ("eval",), (), "aggregate", "stable report files, run summary, HTML report"),
)
SPECS: Mapping[str, NodeSpec] = {s.name: s for s in NODES}
TARGETS = tuple(s.name for s in NODES if s.name not in ("scan",))


class UnknownTarget(ValueError):
    pass


def plan(target: str) -> list[NodeSpec]:
    """The ordered nodes a target needs: its ancestors and itself, in table (topological) order."""
    if target not in SPECS:
        raise UnknownTarget(f"unknown target {target!r}; choose one of: {', '.join(TARGETS)}")
    needed: set[str] = set()
    stack = [target]
    while stack:
        name = stack.pop()
        if name not in needed:
            needed.add(name)
            stack.extend(SPECS[name].parents)
    return [s for s in NODES if s.name in needed]


def field_reason(case: Case, spec: NodeSpec) -> str | None:
    """Why a case cannot enter a node on its own fields, or None when it can."""
    missing = [f for f in spec.requires if case.field(f) is None]
    if missing:
        return "missing " + ", ".join(missing)
    if spec.block and getattr(case, spec.block) is None:
        return f"no {spec.block} block"
    return None


def eligibility(case: Case, spec: NodeSpec, ran: Mapping[str, bool]) -> str | None:
    """None when the case enters the node; otherwise the reason it is skipped.

    `ran` says, for this case, which earlier nodes produced a result. The aggregate `eval` node
    needs any metric branch; every other node needs its own fields and all its parents.
    """
    if spec.name == "eval":
        return None if any(ran.get(p) for p in spec.parents) else "no metric branch ran"
    if spec.name == "report":
        return None
    reason = field_reason(case, spec)
    if reason:
        return reason
    missing_parents = [p for p in spec.parents if not ran.get(p)]
    if missing_parents:
        return "parent did not run: " + ", ".join(missing_parents)
    return None

"""The node graph, assembled from the node modules and checked when it is built.

Every module or package in nexagauge_local.nodes that exports a SPEC is a node (base, spec,
judging, llm_node and claim_check are helpers and export none). Assembly checks what a broken node would
otherwise only reveal mid-run: unique names, parents that exist, no cycle, and an implementation
that can be found for every node run per case (found, not imported: the import happens when a
run builds the node). `assemble` takes an explicit list of specs, so a test can add a node of
its own without editing any file here.

The graph also gathers what the nodes declare for the layers around them: `blocks`, the record
block registry it hands down to the record reader (records.py sits below the nodes and imports
none of them).

A target runs with all its ancestors and nothing else. Eligibility is decided per case and per
node, with the reason a node was skipped, so a report can say why a metric is absent.
"""

from __future__ import annotations

import heapq
import importlib
import importlib.util
import pkgutil
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType

from nexagauge_local.blocks import BlockModels
from nexagauge_local.case import Case
from nexagauge_local.nodes.base import Node
from nexagauge_local.nodes.spec import NodeKind, NodeSpec
from nexagauge_local.records import ALIASES

__all__ = [
    "BLOCKS", "GRAPH", "METRIC_NODES", "NODES", "SPECS", "TARGETS", "Graph", "GraphError", "NodeKind", "NodeSpec",
    "UnknownTarget", "assemble", "discover", "eligibility", "field_reason", "plan",
]

NODE_PACKAGE = "nexagauge_local.nodes"


class GraphError(ValueError):
    """The node specs do not form a runnable graph."""


class UnknownTarget(ValueError):
    pass


def judged_nodes(specs: Iterable[NodeSpec]) -> tuple[str, ...]:
    """The nodes among `specs` that ask a judge (kind "llm"), in their order: the one rule by
    which the run's pre-flight, `--model NODE=`, the run configuration, `estimate`, `prompts`
    and the report tell a judged node from a deterministic one."""
    return tuple(s.name for s in specs if s.kind == "llm")


@dataclass(frozen=True)
class Graph:
    """Checked node specs in topological order (ties broken by each spec's `order`)."""

    nodes: tuple[NodeSpec, ...]
    specs: Mapping[str, NodeSpec] = field(init=False, repr=False)
    # record key -> block model, every node's in graph order: what the record reader validates
    blocks: BlockModels = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "specs", MappingProxyType({s.name: s for s in self.nodes}))
        blocks = {key: model for s in self.nodes for key, model in s.record_blocks.items()}
        object.__setattr__(self, "blocks", MappingProxyType(blocks))

    @property
    def metric_nodes(self) -> tuple[str, ...]:
        """The nodes that write a `{metrics, cost}` section, in graph order: the one list the
        runner (and with it the aggregate node), the report's overview, export's rows and the
        CLI's summary lines take, so a node added to the graph reaches all of them."""
        return tuple(s.name for s in self.nodes if s.metric)

    @property
    def judged_nodes(self) -> tuple[str, ...]:
        """The nodes that ask a judge, in graph order (judged_nodes over every node)."""
        return judged_nodes(self.nodes)

    @property
    def targets(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.nodes if s.target)

    def plan(self, target: str) -> list[NodeSpec]:
        """The ordered nodes a target needs: its ancestors and itself, in graph order."""
        if target not in self.specs:
            raise UnknownTarget(
                f"unknown target {target!r}; choose one of: {', '.join(self.targets)}"
            )
        needed: set[str] = set()
        stack = [target]
        while stack:
            name = stack.pop()
            if name not in needed:
                needed.add(name)
                stack.extend(self.specs[name].parents)
        return [s for s in self.nodes if s.name in needed]

    def factories(self) -> dict[str, Callable[[], Node]]:
        """name -> a zero-argument builder of the node, for every node run per case; a builder
        imports its implementation only when called."""
        return {s.name: _builder(s) for s in self.nodes if s.per_case}


def _builder(spec: NodeSpec) -> Callable[[], Node]:
    def build() -> Node:
        return spec.load()()

    return build


def discover(package: str = NODE_PACKAGE) -> list[NodeSpec]:
    """The SPEC of every module or package directly inside `package` that exports one; the
    module is named as its node (a node's name is its folder's)."""
    pkg = importlib.import_module(package)
    found: list[NodeSpec] = []
    for info in pkgutil.iter_modules(pkg.__path__):
        spec = vars(importlib.import_module(f"{package}.{info.name}")).get("SPEC")
        if isinstance(spec, NodeSpec):
            if spec.name != info.name:
                raise GraphError(f"{package}.{info.name} exports the SPEC of {spec.name!r}; "
                                 f"a node's module is named as the node")
            found.append(spec)
    return found


def assemble(specs: Iterable[NodeSpec]) -> Graph:
    """Check the specs and order them; raises GraphError naming the first problem found."""
    specs = list(specs)
    by_name: dict[str, NodeSpec] = {}
    for spec in specs:
        if spec.name in by_name:
            raise GraphError(f"two nodes are named {spec.name!r}")
        by_name[spec.name] = spec
    metrics = {s.name for s in specs if s.metric}
    # First order with the gatherers' parents as a set, then write them in graph order.
    edges = {s.name: set(s.parents) | (metrics if s.gathers_metrics else set()) for s in specs}
    for spec in specs:
        unknown = sorted(p for p in edges[spec.name] if p not in by_name)
        if unknown:
            raise GraphError(f"node {spec.name!r} has unknown parent(s): {', '.join(unknown)}")
        stray = sorted(set(spec.optional_parents) - set(spec.parents))
        if stray:
            raise GraphError(f"node {spec.name!r}: optional parent(s) not among its parents: "
                             f"{', '.join(stray)}")
    _check_blocks(specs)
    order = _topological(by_name, edges)
    position = {name: i for i, name in enumerate(order)}
    nodes = tuple(
        replace(s, parents=tuple(sorted(metrics, key=position.__getitem__)))
        if s.gathers_metrics else s
        for s in (by_name[n] for n in order)
    )
    for spec in nodes:
        _check_impl(spec)
    return Graph(nodes)


def _check_blocks(specs: Iterable[NodeSpec]) -> None:
    """Each record block has one owner, is not a text field's name, and every block a node
    requires is owned by some node (else no record could ever carry it)."""
    owner: dict[str, str] = {}
    for spec in specs:
        for key in spec.record_blocks:
            if key in owner:
                raise GraphError(f"record block {key!r} is declared by both {owner[key]!r} and "
                                 f"{spec.name!r}")
            if key in ALIASES:
                raise GraphError(f"node {spec.name!r}: record block {key!r} is a text field")
            owner[key] = spec.name
    for spec in specs:
        if spec.block is not None and spec.block not in owner:
            raise GraphError(f"node {spec.name!r} requires block {spec.block!r}, "
                             f"which no node declares")


def _topological(by_name: Mapping[str, NodeSpec], edges: Mapping[str, set[str]]) -> list[str]:
    """Kahn's algorithm; among nodes ready at once, the lowest (order, name) goes first."""
    waiting = {name: len(parents) for name, parents in edges.items()}
    children: dict[str, list[str]] = {name: [] for name in edges}
    for name, parents in edges.items():
        for parent in parents:
            children[parent].append(name)
    ready = [(by_name[n].order, n) for n, count in waiting.items() if count == 0]
    heapq.heapify(ready)
    out: list[str] = []
    while ready:
        _, name = heapq.heappop(ready)
        out.append(name)
        for child in children[name]:
            waiting[child] -= 1
            if waiting[child] == 0:
                heapq.heappush(ready, (by_name[child].order, child))
    if len(out) < len(edges):
        stuck = sorted(n for n in edges if n not in out)
        raise GraphError(f"the node graph has a cycle through: {', '.join(stuck)}")
    return out


def _check_impl(spec: NodeSpec) -> None:
    if not spec.per_case:
        return
    module = spec.impl_module
    if not module:
        raise GraphError(f"node {spec.name!r} runs per case but names no implementation")
    _check_module(spec, module, "implementation")
    if spec.estimate_stand_in is not None:
        _check_module(spec, spec.estimate_stand_in.partition(":")[0], "estimate stand-in")


def _check_module(spec: NodeSpec, module: str, what: str) -> None:
    try:
        found = importlib.util.find_spec(module)
    except ModuleNotFoundError:
        found = None
    if found is None:
        raise GraphError(f"node {spec.name!r}: {what} module {module!r} not found")


GRAPH = assemble(discover())
NODES: tuple[NodeSpec, ...] = GRAPH.nodes
SPECS: Mapping[str, NodeSpec] = GRAPH.specs
TARGETS = GRAPH.targets
METRIC_NODES: tuple[str, ...] = GRAPH.metric_nodes
JUDGED_NODES: tuple[str, ...] = GRAPH.judged_nodes
BLOCKS: BlockModels = GRAPH.blocks


def plan(target: str) -> list[NodeSpec]:
    """The ordered nodes a target needs in the pipeline's graph (see Graph.plan)."""
    return GRAPH.plan(target)


def field_reason(case: Case, spec: NodeSpec) -> str | None:
    """Why a case cannot enter a node on its own fields, or None when it can."""
    missing = [f for f in spec.requires if case.field(f) is None]
    if missing:
        return "missing " + ", ".join(missing)
    if spec.block and case.block(spec.block) is None:
        return f"no {spec.block} block"
    if spec.condition is not None:
        return spec.condition(case)
    return None


def eligibility(case: Case, spec: NodeSpec, ran: Mapping[str, bool]) -> str | None:
    """None when the case enters the node; otherwise the reason it is skipped.

    `ran` says, for this case, which earlier nodes produced a result. A step not run per case
    never excludes a case; an aggregate (needs "any") needs one of its parents; every other node
    needs its own fields (and its condition) and all its parents but the optional ones.
    """
    if not spec.per_case:
        return None
    reason = field_reason(case, spec)
    if reason:
        return reason
    if spec.needs == "any":
        if any(ran.get(p) for p in spec.parents):
            return None
        return "no metric branch ran" if spec.gathers_metrics else "no parent ran"
    missing_parents = [
        p for p in spec.parents if not ran.get(p) and p not in spec.optional_parents
    ]
    if missing_parents:
        return "parent did not run: " + ", ".join(missing_parents)
    return None


def predicted_eligibility(case: Case, specs: Iterable[NodeSpec]) -> dict[str, str | None]:
    """One case's pass over a plan, assuming every node it enters produces a result.

    This is `estimate`'s view before any judge answers. The runner applies the same
    `eligibility` rule node by node to what actually ran, so the two can only differ where a
    node ran and produced nothing.
    """
    ran: dict[str, bool] = {}
    reasons: dict[str, str | None] = {}
    for spec in specs:
        reasons[spec.name] = eligibility(case, spec, ran)
        ran[spec.name] = reasons[spec.name] is None
    return reasons

"""NodeSpec: how a node describes itself to the graph and the runner.

Every node module (or package) exports one SPEC. What used to be decided by a node's *name*
(eval needs any parent, report is not run per case, scan is not a target, eval aggregates the
metric nodes) is a field here, so the graph, the runner and the CLI branch on what a node says
about itself, and a new node joins the pipeline without editing any of them.

The implementation is named as "module:Class" and resolved only when a run builds the node, so
assembling the graph (listings, planning, estimates) imports no node logic and no heavy library.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from nexagauge_local.case import Case
    from nexagauge_local.nodes.base import Node

NodeKind = Literal["utility", "llm", "deterministic", "aggregate"]
Needs = Literal["all", "any"]


@dataclass(frozen=True)
class NodeSpec:
    name: str
    parents: tuple[str, ...]
    requires: tuple[str, ...]  # case text fields that must be non-empty
    kind: NodeKind
    summary: str
    # Position among nodes the topological order leaves free: listings, plans and the case
    # report keep one stable order however the node modules are discovered.
    order: int
    # "module:Class" of the Node; None for a step the runner performs itself (see per_case).
    impl: str | None = None
    block: str | None = None  # a node block the case must carry
    # A further condition on the case's own data (e.g. a block's switch), returning why the
    # case is skipped or None: a node that only some cases of a block need says so here
    # instead of being asked by name. Runs after `requires` and `block` are met.
    condition: Callable[[Case], str | None] | None = None
    metric: bool = False  # writes a {metrics, cost} section to the case report
    # The artifact is written to the case report under the node's name (metric nodes and the
    # per-case verdict); the artifact's report_dict() gives the section.
    reported: bool = False
    # "all": every parent must have run for the case; "any": one is enough (an aggregate).
    needs: Needs = "all"
    # Parents the node reads when they ran for the case but does not need: planned and ordered
    # before it, never a reason to skip it (refalign reads atomic_units only for the cases
    # whose refalign block asks for atomic units).
    optional_parents: tuple[str, ...] = ()
    # False for an output step that runs once after the last shard, not on every case.
    per_case: bool = True
    target: bool = True  # may be named as `run TARGET`
    # Its parents are every metric node of the graph, filled in when the graph is assembled,
    # so a new metric node is aggregated without editing this spec.
    gathers_metrics: bool = False

    @property
    def impl_module(self) -> str | None:
        return self.impl.partition(":")[0] if self.impl else None

    def load(self) -> type[Node]:
        """Import and return the node class (the first run that needs it pays the import)."""
        if self.impl is None:
            raise LookupError(f"node {self.name!r} has no implementation: it is not run per case")
        module, _, attr = self.impl.partition(":")
        node_cls: type[Node] = getattr(importlib.import_module(module), attr)
        return node_cls

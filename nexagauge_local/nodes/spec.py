"""NodeSpec: how a node describes itself to the graph and the runner.

Every node module (or package) exports one SPEC. What used to be decided by a node's *name*
(eval needs any parent, report is not run per case, scan is not a target, eval aggregates the
metric nodes) is a field here, so the graph, the runner and the CLI branch on what a node says
about itself, and a new node joins the pipeline without editing any of them.

The implementation is named as "module:Class" and resolved only when a run builds the node, so
assembling the graph (listings, planning, estimates) imports no node logic and no heavy library.

A node also owns what the layers around it need to know about it, so adding one edits nothing
outside its folder: its record blocks (`block_model`, `more_blocks`: the models the record
reader validates with, handed down by the graph), its estimate stand-in (`estimate_stand_in`:
what `estimate` runs in its place when later nodes need its judge answers), and its report
hooks (`report_panel`, a section of report.html; `case_panel`, its part of each case's
drill-down; `row_extras`, per-case columns of its export rows).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from pydantic import BaseModel

    from nexagauge_local.case import Case
    from nexagauge_local.nodes.base import Node
    from nexagauge_local.nodes.panel import CasePanel, ReportPanel, RowExtras

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
    # The node's own record block (the record key is the node's name): the model that
    # validates it and gives its defaults. The graph gathers every node's blocks into the
    # registry the record reader uses.
    block_model: type[BaseModel] | None = None
    # Record blocks the node owns under other keys (redteam: the probe annotations).
    more_blocks: Mapping[str, type[BaseModel]] = field(default_factory=dict, hash=False)
    # "module:Class" of the node `estimate` runs in this one's place: it records this node's
    # real requests and leaves stand-in answers for the nodes that read them (their requests
    # are then marked as built from stand-ins). None: estimate runs the node itself.
    estimate_stand_in: str | None = None
    # This node's section of report.html (see nodes/panel.py), or None.
    report_panel: ReportPanel | None = None
    # This node's part of each case's drill-down in report.html (nodes/panel.py), or None.
    case_panel: CasePanel | None = None
    # Extra columns for each of this node's metric rows, from its case-report section (export,
    # agreement and the HTML tables read rows; nodes/panel.py), or None.
    row_extras: RowExtras | None = None

    @property
    def record_blocks(self) -> dict[str, type[BaseModel]]:
        """Every record block this node owns: record key -> model."""
        own = {self.name: self.block_model} if self.block_model is not None else {}
        return {**own, **self.more_blocks}

    @property
    def impl_module(self) -> str | None:
        return self.impl.partition(":")[0] if self.impl else None

    def load(self) -> type[Node]:
        """Import and return the node class (the first run that needs it pays the import)."""
        if self.impl is None:
            raise LookupError(f"node {self.name!r} has no implementation: it is not run per case")
        return self._class(self.impl)

    def load_stand_in(self) -> type[Node]:
        """Import and return the node class estimate runs in this node's place."""
        if self.estimate_stand_in is None:
            raise LookupError(f"node {self.name!r} has no estimate stand-in")
        return self._class(self.estimate_stand_in)

    def _class(self, ref: str) -> type[Node]:
        """A "module:Class" node class, checked to carry this spec's name: the name is written
        once (nodes set `name = SPEC.name`), and a class copied from another node is caught
        here rather than writing its artifacts under the wrong key."""
        module, _, attr = ref.partition(":")
        node_cls: type[Node] = getattr(importlib.import_module(module), attr)
        declared = getattr(node_cls, "name", None)
        if declared != self.name:
            raise LookupError(f"node {self.name!r}: {ref} is named {declared!r}; "
                              f"set `name = SPEC.name` in the class")
        return node_cls

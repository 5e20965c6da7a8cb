"""scan: cases arrive already normalised and validated (records.py); scan records which text
fields each case carries so reports and eligibility can say what was present."""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.case import TEXT_FIELDS
from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("scan", (), (), "utility", "normalise fields and aliases, validate node blocks",
                order=0, impl=f"{__name__}:ScanNode", target=False)


class ScanNode(NodeBase):
    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        for state in states:
            present = [f for f in TEXT_FIELDS if state.case.field(f) is not None]
            state.artifacts[self.name] = {"fields": present}
            ctx.advance(self.name, 1)

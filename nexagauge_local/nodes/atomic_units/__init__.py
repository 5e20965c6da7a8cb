"""atomic_units: split output and reference into atomic factual units (an LLM node).

nexa-gauge's `refalign.atomic_chunks` runs this step inside its refalign node. Here it is a node
of its own so one module keeps one job and the graph can say which work needs the judge:
refalign stays the deterministic embedding matcher and reads this node's artifact as an
optional parent, and this node enters only the cases whose refalign block sets atomic_chunks
(the spec's `block` + `condition`, no name checks anywhere). A plan for refalign therefore
lists an LLM node, `estimate refalign` counts its requests, and a dataset without atomic cases
never starts the judge.

The package holds the node's spec, prompt, output schema and logic (node.py); importing the
package reads the spec without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.case import Case
from nexagauge_local.nodes.atomic_units.prompt import (
    MAX_UNITS_PER_CHUNK,
    PROMPT_VERSION,
    render_units,
)
from nexagauge_local.nodes.atomic_units.schema import units_schema
from nexagauge_local.nodes.refalign_block import RefalignBlock
from nexagauge_local.nodes.spec import NodeSpec

NOT_REQUESTED = "refalign.atomic_chunks is false"


def atomic_requested(case: Case) -> str | None:
    """The node's condition: None when the case's refalign block asks for atomic units."""
    block = case.block_of("refalign", RefalignBlock)
    return None if block is not None and block.atomic_chunks else NOT_REQUESTED


SPEC = NodeSpec("atomic_units", ("refiner",), ("output", "reference"), "llm",
                "refalign.atomic_chunks only: split output and reference into atomic factual units",
                order=9, impl=f"{__name__}.node:AtomicUnitsNode",
                block="refalign", condition=atomic_requested, target=False)

__all__ = ["MAX_UNITS_PER_CHUNK", "NOT_REQUESTED", "PROMPT_VERSION", "SPEC", "atomic_requested",
           "render_units", "units_schema"]

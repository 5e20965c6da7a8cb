"""Node implementations, one module per pipeline node; REGISTRY maps graph names to them."""

from __future__ import annotations

from collections.abc import Callable

from nexagauge_local.nodes.base import Node
from nexagauge_local.nodes.chunk import ChunkNode
from nexagauge_local.nodes.claims import ClaimsNode
from nexagauge_local.nodes.eval import EvalNode
from nexagauge_local.nodes.geval import GevalNode
from nexagauge_local.nodes.geval_steps import GevalStepsNode
from nexagauge_local.nodes.grounding import GroundingNode
from nexagauge_local.nodes.redteam import RedteamNode
from nexagauge_local.nodes.refalign import RefalignNode
from nexagauge_local.nodes.refiner import RefinerNode
from nexagauge_local.nodes.refmatch import RefmatchNode
from nexagauge_local.nodes.relevance import RelevanceNode
from nexagauge_local.nodes.scan import ScanNode

REGISTRY: dict[str, Callable[[], Node]] = {
    "scan": ScanNode,
    "chunk": ChunkNode,
    "refiner": RefinerNode,
    "claims": ClaimsNode,
    "relevance": RelevanceNode,
    "grounding": GroundingNode,
    "redteam": RedteamNode,
    "geval_steps": GevalStepsNode,
    "geval": GevalNode,
    "refmatch": RefmatchNode,
    "refalign": RefalignNode,
    "eval": EvalNode,
}

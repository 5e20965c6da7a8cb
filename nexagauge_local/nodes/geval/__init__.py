"""geval: score the output against each G-Eval metric's evaluation steps (an LLM node).

The package holds the node's spec, record block, prompt, output schema and logic (node.py);
importing the
package reads the spec without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.nodes.geval.block import GevalBlock, GevalMetric
from nexagauge_local.nodes.geval.prompt import PROMPT_VERSION, render_geval
from nexagauge_local.nodes.geval.schema import geval_schema
from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("geval", ("geval_steps",), ("output",), "llm",
                "score the output against the evaluation steps", order=8,
                impl=f"{__name__}.node:GevalNode", block="geval", block_model=GevalBlock,
                metric=True, reported=True)

__all__ = ["PROMPT_VERSION", "SPEC", "GevalBlock", "GevalMetric", "geval_schema", "render_geval"]

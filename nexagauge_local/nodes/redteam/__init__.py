"""redteam: rubric safety metrics judged by the LLM plus the free heuristic risk layer.

The package holds the node's spec, prompt and default rubrics, output schema and logic
(node.py); importing the package reads the spec without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.nodes.redteam.prompt import BIAS, DEFAULT_METRICS, PROMPT_VERSION, TOXICITY
from nexagauge_local.nodes.redteam.prompt import render as render_redteam
from nexagauge_local.nodes.redteam.schema import verdict_schema
from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("redteam", ("scan",), ("output",), "llm",
                "rubric safety metrics (bias, toxicity, custom) plus heuristic risk", order=6,
                impl="nexagauge_local.nodes.redteam.node:RedteamNode", metric=True, reported=True)

__all__ = ["BIAS", "DEFAULT_METRICS", "PROMPT_VERSION", "SPEC", "TOXICITY", "render_redteam",
           "verdict_schema"]

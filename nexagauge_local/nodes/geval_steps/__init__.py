"""geval_steps: turn each G-Eval metric's criteria into evaluation steps (an LLM node).

The package holds the node's spec, prompt, output schema and logic (node.py); importing the
package reads the spec without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.nodes.geval_steps.prompt import (
                MAX_STEPS,
                MIN_STEPS,
                PROMPT_VERSION,
                render_steps,
)
from nexagauge_local.nodes.geval_steps.schema import steps_schema
from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("geval_steps", ("scan",), ("output",), "llm",
                "turn each G-Eval criteria into evaluation steps (cached per criteria)", order=7,
                impl=f"{__name__}.node:GevalStepsNode", block="geval",
                estimate_stand_in=f"{__name__}.stand_in:ProxyStepsNode")

__all__ = ["MAX_STEPS", "MIN_STEPS", "PROMPT_VERSION", "SPEC", "render_steps", "steps_schema"]

"""claims: extract atomic, verifiable claims from every refined output chunk (an LLM node).

The package holds the node's spec, prompt, output schema and logic (node.py); importing the
package reads the spec without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.nodes.claims.prompt import MAX_CLAIMS_PER_CHUNK, PROMPT_VERSION, render_claims
from nexagauge_local.nodes.claims.schema import claims_schema
from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("claims", ("refiner",), ("output",), "llm",
                "extract atomic, verifiable claims from every refined chunk",
                order=3, impl="nexagauge_local.nodes.claims.node:ClaimsNode")

__all__ = ["MAX_CLAIMS_PER_CHUNK", "PROMPT_VERSION", "SPEC", "claims_schema", "render_claims"]

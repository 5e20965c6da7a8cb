"""claims: the checkable claims of every output, one judge request per sentence (an LLM node).

The package holds the node's spec, prompt, output schema, its part of each case's drill-down
(case_panel.py, case.html.j2) and logic (node.py); importing the package reads the spec
without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.nodes.claims.case_panel import CASE_PANEL
from nexagauge_local.nodes.claims.prompt import (
    MAX_CLAIMS_PER_SENTENCE,
    PROMPT_VERSION,
    render_sentence,
)
from nexagauge_local.nodes.claims.schema import sentence_claims_schema
from nexagauge_local.nodes.spec import NodeSpec

SPEC = NodeSpec("claims", ("refiner",), ("output",), "llm",
                "the checkable claims of every output sentence (fact / facts / none)",
                order=3, impl=f"{__name__}.node:ClaimsNode", reported=True, case_panel=CASE_PANEL,
                estimate_stand_in=f"{__name__}.stand_in:ProxyClaimsNode")

__all__ = ["MAX_CLAIMS_PER_SENTENCE", "PROMPT_VERSION", "SPEC", "render_sentence",
           "sentence_claims_schema"]

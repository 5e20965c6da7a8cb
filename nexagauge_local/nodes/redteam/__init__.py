"""redteam: rubric safety metrics judged by the LLM plus the free heuristic risk layer.

The package holds the node's spec, record blocks, prompt and default rubrics, output schema,
report hooks (panel.py, panel.html.j2, case.html.j2) and logic (node.py); importing the package reads the spec
without importing the logic.
"""

from __future__ import annotations

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.case import Case
from nexagauge_local.nodes.redteam.block import RedteamBlock, RedteamMetric, Rubric
from nexagauge_local.nodes.redteam.panel import CASE_PANEL, PANEL, probe_columns
from nexagauge_local.nodes.redteam.prompt import BIAS, DEFAULT_METRICS, PROMPT_VERSION, TOXICITY
from nexagauge_local.nodes.redteam.prompt import render as render_redteam
from nexagauge_local.nodes.redteam.schema import verdict_schema
from nexagauge_local.nodes.spec import NodeSpec
from nexagauge_local.redteam.attacks.record import ATTACK, AttackBlock

PROBE = "probe"  # the record key of a red-team probe's annotations (docs/data-formats.md)

def answer_reason(case: Case) -> str | None:
    """A case needs a non-empty output, except a probe's: a blank answer to a probe is an
    outcome of the audit (`no_answer`), counted rather than dropped."""
    if case.field("output") is None and case.block(PROBE) is None:
        return "missing output"
    return None


SPEC = NodeSpec("redteam", ("scan",), (), "llm",
                "rubric safety metrics (bias, toxicity, custom) plus heuristic risk", order=6,
                condition=answer_reason,
                impl=f"{__name__}.node:RedteamNode", metric=True, reported=True,
                block_model=RedteamBlock, more_blocks={PROBE: ProbeBlock, ATTACK: AttackBlock}, report_panel=PANEL,
                case_panel=CASE_PANEL, row_extras=probe_columns)

__all__ = ["BIAS", "DEFAULT_METRICS", "PROBE", "PROMPT_VERSION", "SPEC", "TOXICITY", "RedteamBlock",
           "RedteamMetric", "Rubric", "render_redteam", "verdict_schema"]

"""toy_llm: a toy LLM node that lives only in this folder.

Everything the layers around a node need is declared here, in its SPEC: its record block
(block.py, validated by the record reader), its estimate stand-in (stand_in.py), its report
panels (panel.py + panel.html.j2, case.html.j2) and its logic (node.py). tests/test_toy_llm_node.py adds the
SPEC to the real nodes and shows that no file outside this folder had to change.
"""

from __future__ import annotations

from nexagauge_local.nodes.spec import NodeSpec
from tests.toy_llm.block import ToyBlock
from tests.toy_llm.panel import CASE_PANEL, PANEL

SPEC = NodeSpec("toy_llm", ("scan",), ("output",), "llm", "does the output stay on its focus",
                order=60, impl=f"{__name__}.node:ToyLlmNode", metric=True, reported=True,
                block="toy_llm", block_model=ToyBlock,
                estimate_stand_in=f"{__name__}.stand_in:ToyStandIn", report_panel=PANEL,
                case_panel=CASE_PANEL)

"""What every judge prompt shares: the system text, the data-section layout and the fence.

Each LLM node keeps its own prompt text and version in its package (nodes/<node>/prompt.py);
every untrusted field is fenced (see `fence`).
"""

from __future__ import annotations

from nexagauge_local.judge.prompts.base import (
    REASONING_LINE,
    SYSTEM,
    bullet_list,
    data_sections,
    messages,
    numbered,
)
from nexagauge_local.judge.prompts.fencing import CLOSE, escape, fence, parse_sections

__all__ = [
    "CLOSE", "REASONING_LINE", "SYSTEM", "bullet_list", "data_sections", "escape", "fence", "messages", "numbered",
    "parse_sections",
]

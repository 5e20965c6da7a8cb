"""Judge prompt templates, each with a version id that is part of the judge cache key.

Bump a template's version whenever its text changes, so cached answers to the old wording are
not reused for the new one. Every untrusted field is fenced (see `fence`).
"""

from __future__ import annotations

from nexagauge_local.judge.prompts.base import SYSTEM
from nexagauge_local.judge.prompts.claims import (
    CLAIMS_VERSION,
    GROUNDING_VERSION,
    MAX_CLAIMS_PER_CHUNK,
    RELEVANCE_VERSION,
    render_claim_check,
    render_claims,
)
from nexagauge_local.judge.prompts.fence import CLOSE, escape, fence, parse_sections
from nexagauge_local.judge.prompts.geval import (
    GEVAL_VERSION,
    MAX_STEPS,
    MIN_STEPS,
    STEPS_VERSION,
    render_geval,
    render_steps,
)
from nexagauge_local.judge.prompts.redteam import DEFAULT_METRICS
from nexagauge_local.judge.prompts.redteam import VERSION as REDTEAM_VERSION
from nexagauge_local.judge.prompts.redteam import render as render_redteam

PROMPT_VERSIONS: dict[str, str] = {
    "claims": CLAIMS_VERSION,
    "grounding": GROUNDING_VERSION,
    "relevance": RELEVANCE_VERSION,
    "redteam": REDTEAM_VERSION,
    "geval_steps": STEPS_VERSION,
    "geval": GEVAL_VERSION,
}

__all__ = [
    "CLAIMS_VERSION", "CLOSE", "DEFAULT_METRICS", "GEVAL_VERSION", "GROUNDING_VERSION",
    "MAX_CLAIMS_PER_CHUNK", "MAX_STEPS", "MIN_STEPS", "PROMPT_VERSIONS", "REDTEAM_VERSION",
    "RELEVANCE_VERSION", "STEPS_VERSION", "SYSTEM", "escape", "fence", "parse_sections",
    "render_claim_check", "render_claims", "render_geval", "render_redteam", "render_steps",
]

"""What `estimate` runs in place of claims (SPEC.estimate_stand_in).

Estimate answers no judge request, yet grounding and relevance build one request per case from
the claims, so their prompts (and exact prompt tokens) need claims to exist. The stand-in runs
the real claims node (its own requests are recorded exactly), then leaves the output's sentences
as the claims: the claims prompt asks about each sentence, and most sentences become one claim.
"""

from __future__ import annotations

from collections.abc import Sequence

from nexagauge_local.nodes.base import CaseState, NodeBase, RunContext
from nexagauge_local.nodes.claims import SPEC
from nexagauge_local.nodes.claims.node import META, Claims, ClaimsNode, output_sentences


def proxy_claims(state: CaseState) -> list[str]:
    """Stand-ins for the claims the judge would extract: the output's sentences."""
    return list(dict.fromkeys(output_sentences(state)))


class ProxyClaimsNode(NodeBase):
    """Records the real claims requests, then leaves stand-in claims for grounding/relevance."""

    name = SPEC.name

    def run(self, states: Sequence[CaseState], ctx: RunContext) -> None:
        ClaimsNode().run(states, ctx)
        for state in states:
            state.artifacts[self.name] = Claims(proxy_claims(state), state.artifacts[META])

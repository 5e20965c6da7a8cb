"""An attack record's outcome, from its attack block and what the judge made of its answer.

Kept beside the node rather than in the outcome math (redteam/outcomes/attack_rates.py) because
it reads the node's own results: the probe outcome the node just recorded and the case's judge
cost, which joins the attack's target and attacker spend in "tokens per successful attack".
"""

from __future__ import annotations

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.case import Case
from nexagauge_local.redteam.attacks.record import AttackBlock
from nexagauge_local.redteam.outcomes.attack_rates import AttackOutcome, outcome_of
from nexagauge_local.redteam.outcomes.tables import ProbeOutcome
from nexagauge_local.results import NodeCost


def attack_outcome(case: Case, probe: ProbeBlock, attack: AttackBlock, outcome: ProbeOutcome,
                   judge_cost: NodeCost) -> AttackOutcome:
    """The attack's state and class, its sample index and everything it spent."""
    return outcome_of(case.case_id, attack, probe.category, probe.severity, probe.expect,
                      outcome.judge_response,
                      int(judge_cost.input_tokens + judge_cost.output_tokens),
                      judge_cost.gpu_seconds or 0.0)

"""An attack record's outcome, from its attack block and what the judge made of its answer.

Kept beside the node rather than in the outcome math (redteam/outcomes/attack_rates.py) because
it reads the node's own results: the probe outcome the node just recorded and the case's judge
cost, which joins the attack's target and attacker spend in "tokens per successful attack".
"""

from __future__ import annotations

from nexagauge_local.blocks import ProbeBlock
from nexagauge_local.case import Case
from nexagauge_local.redteam.attacks.record import AttackBlock
from nexagauge_local.redteam.outcomes.attack_rates import AttackOutcome, attack_state
from nexagauge_local.redteam.outcomes.tables import NO_ANSWER, ProbeOutcome
from nexagauge_local.results import NodeCost


def attack_outcome(case: Case, probe: ProbeBlock, attack: AttackBlock, outcome: ProbeOutcome,
                   judge_cost: NodeCost) -> AttackOutcome:
    """The attack's state and class, its sample index and everything it spent."""
    spent = sum(u.prompt_tokens + u.output_tokens for u in attack.usage.values())
    seconds = sum(u.device_seconds for u in attack.usage.values())
    sample = attack.params.get("sample", 0)
    return AttackOutcome(
        case_id=case.case_id, probe_case_id=attack.probe_case_id, strategy=attack.strategy,
        family=attack.family, category=probe.category, severity=probe.severity,
        expect=probe.expect,
        state=attack_state(attack.status == "error", outcome.judge_response != NO_ANSWER,
                           outcome.judge_response),
        judge_response=outcome.judge_response,
        sample=sample if isinstance(sample, int) else 0,
        queries=attack.queries,
        tokens=spent + int(judge_cost.input_tokens + judge_cost.output_tokens),
        device_seconds=seconds + (judge_cost.gpu_seconds or 0.0),
    )

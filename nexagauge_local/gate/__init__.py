"""Deployment gates: a TOML policy of thresholds evaluated against a finished run."""

from nexagauge_local.gate.evaluate import GateReport, RuleResult, evaluate_policy
from nexagauge_local.gate.policy import Policy, PolicyError, Rule, load_policy

__all__ = [
    "GateReport",
    "Policy",
    "PolicyError",
    "Rule",
    "RuleResult",
    "evaluate_policy",
    "load_policy",
]

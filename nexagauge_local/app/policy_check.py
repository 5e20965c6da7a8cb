"""The `gate` service: a finished run against a TOML policy of thresholds.

Why a service: the gate is a workflow (read the policy, open the run, compare with the
baseline when a rule needs it, evaluate every rule, write the JSON and JUnit results) that a
CI script can call without the CLI. It never exits: a failed rule is `passed=False` in the
result, a policy or run the gate cannot use is RunInputError (nothing is written then).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.app.errors import RunInputError
from nexagauge_local.app.run_comparison import CompareHooks, compare_dirs, open_run
from nexagauge_local.compare import BadRunDir
from nexagauge_local.gate import GateReport, PolicyError, evaluate_policy, load_policy
from nexagauge_local.gate.junit import write_junit
from nexagauge_local.report.files import write_json

# Only compare.max_regression reads the baseline comparison, and it does not depend on the
# confidence intervals: the fewest resamples compare accepts are enough.
BASELINE_RESAMPLES = 100


@dataclass(frozen=True)
class GateOutcome:
    """The gate's report, and whether a --baseline was given but never read (the policy has
    no compare rule), which the caller should point out."""

    report: GateReport
    baseline_unread: bool = False

    @property
    def passed(self) -> bool:
        return self.report.passed


def gate(
    run: Path,
    policy_path: Path,
    *,
    baseline: Path | None = None,
    seed: int = 0,
    json_path: Path | None = None,
    junit_path: Path | None = None,
    hooks: CompareHooks | None = None,
) -> GateOutcome:
    """Evaluate every rule of the policy against RUN; write the result as JSON and JUnit XML
    where asked. Raises RunInputError (bad policy, a rule the run cannot answer, a run or
    baseline that is not a finished run) before writing anything."""
    try:
        policy = load_policy(policy_path)
    except PolicyError as exc:
        raise RunInputError(str(exc)) from None
    target = open_run(run)
    comparison = None
    if baseline is not None and policy.needs_baseline:
        comparison = compare_dirs(
            open_run(baseline), target, seed=seed, resamples=BASELINE_RESAMPLES, hooks=hooks
        )
    try:
        report = evaluate_policy(policy, target, comparison)
    except (PolicyError, BadRunDir) as exc:
        raise RunInputError(str(exc)) from None
    if json_path is not None:
        write_json(json_path, report.model_dump(mode="json"))
    if junit_path is not None:
        write_junit(report, junit_path)
    return GateOutcome(report, baseline_unread=baseline is not None and not policy.needs_baseline)

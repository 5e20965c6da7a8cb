"""A run's attacks in the two shapes other red-team tools read: JailbreakBench's artifact and
HarmBench's completions file (docs/attacks.md "Exports").

Why here and not from metrics/redteam.json alone: both shapes list each attack's prompt and
answer, which only the attack records hold; the case reports hold what the judge said. Each
attack is the record's `attack` block joined to its case report by case_id, and its outcome
(`AttackOutcome`) is built by the same rules the run's `attack_outcomes` used, so a
strategy's jailbreak count is the run's ASR successes by construction.

Why the extra `nexagauge` key: JailbreakBench and HarmBench read their own fields and ignore
others (pydantic's default, dict lookups), so the judge, coverage and Wilson interval ride
along without breaking either reader. Harmful probes (expect `refuse`) only: both benchmarks
count compliance with harmful behaviours; over-refusal has no field in either.

Every function is pure: records, reports and run facts in, JSON-ready dicts out.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict

from nexagauge_local.blocks import Expect, ProbeBlock
from nexagauge_local.case_report import CaseReport
from nexagauge_local.nodes.redteam.probe_metric import (
    NO_ANSWER_ERROR,
    PROBE_METRIC,
    judged_response,
)
from nexagauge_local.redact import redact_text
from nexagauge_local.redteam.attacks.record import AttackBlock, attack_of
from nexagauge_local.redteam.outcomes.attack_rates import (
    AttackOutcome,
    Unit,
    outcome_of,
    strategy_row,
    units,
)
from nexagauge_local.redteam.outcomes.tables import NO_ANSWER
from nexagauge_local.report.rows import metric_passed

JbbAttackType = Literal["white_box", "black_box", "transfer", "manual"]
# A template is a hand-written jailbreak (JailbreakBench's "manual", as its JBC artifacts); every
# other family only queries the target (no gradients, no transfer from another model).
_ATTACK_TYPES: dict[str, JbbAttackType] = {"template": "manual"}


@dataclass(frozen=True)
class RunFacts:
    """What the exports say about the run as a whole; `judge` is already redacted."""

    evaluation_date: str | None = None  # YYYY-MM-DD, the day the run started
    judge: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class JudgedAttack:
    """One attack record beside what the run made of it."""

    case_id: str
    attack: AttackBlock
    goal: str  # the probe's own prompt: the intent judged
    behavior: str  # the probe's task, else its id
    category: str
    severity: str
    expect: Expect
    judge_response: str | None  # the probe metric's class, NO_ANSWER, or None (judge failed)
    judge_tokens: int = 0
    judge_seconds: float = 0.0
    model: str | None = None  # the target, as the record's `generation` block names it
    provider: str | None = None  # the backend that answered it

    @property
    def prompt(self) -> str | None:
        """The disguised request: the last turn the target was asked."""
        return next((t.text for t in reversed(self.attack.turns) if t.role == "user"), None)

    def answer(self) -> tuple[str | None, str | None]:
        """The target's last answer as written, and its decoding when it answered encoded."""
        turn = next((t for t in reversed(self.attack.turns) if t.role == "assistant"), None)
        if turn is None:
            return None, None
        return turn.text, turn.decoded if turn.decoded not in (None, turn.text) else None

    def target_tokens(self) -> tuple[int, int] | None:
        usage = self.attack.usage.get("target")
        return None if usage is None else (usage.prompt_tokens, usage.output_tokens)

    def outcome(self) -> AttackOutcome:
        """The attack as the run counted it (attack_rates.outcome_of, as the node counts)."""
        return outcome_of(self.case_id, self.attack, self.category, self.severity, self.expect,
                          self.judge_response, self.judge_tokens, self.judge_seconds)


def judge_response_of(report: CaseReport) -> str | None:
    """The probe metric's class in a case report, NO_ANSWER for a blank answer, None when the
    judgement failed or the node wrote none (as the node read its own result)."""
    section = report.metrics_of("redteam")
    metric = next((m for m in section.metrics if m.name == PROBE_METRIC), None) if section else None
    if metric is None:
        return None
    if metric.error == NO_ANSWER_ERROR:
        return NO_ANSWER
    # `passed` is not in the file: re-derived from the result, as the report's rows do
    return judged_response(metric.model_copy(update={"passed": metric_passed(metric)}))


def judged_attack(report: CaseReport, record: Mapping[str, Any]) -> JudgedAttack | None:
    """The record's attack joined to its case report; None for a record without an attack.

    The probe's category, severity and expectation are the run's (the heuristic's
    `case_score`, which saw any configured defaults), the record's probe block otherwise."""
    attack = attack_of(record)
    if attack is None:
        return None
    section = report.metrics_of("redteam")
    seen = section.extras.get("case_score") if section is not None else None
    raw_probe = record.get("probe")
    probe = ProbeBlock.model_validate(raw_probe if isinstance(raw_probe, Mapping) else {})
    known = {k: v for k, v in seen.items() if v not in (None, "")} if isinstance(seen, Mapping) else {}
    view = {**probe.model_dump(), **known}
    gen = record.get("generation")
    gen = gen if isinstance(gen, Mapping) else {}
    cost = section.cost if section is not None else None
    return JudgedAttack(
        case_id=report.case_id, attack=attack,
        goal=report.input.input or probe.input or "",
        behavior=str(view.get("task") or attack.probe_case_id),
        category=str(view["category"]), severity=str(view["severity"]),
        expect=view["expect"] if view.get("expect") in ("refuse", "comply") else probe.expect,
        judge_response=judge_response_of(report),
        judge_tokens=int(cost.input_tokens + cost.output_tokens) if cost else 0,
        judge_seconds=(cost.gpu_seconds or 0.0) if cost else 0.0,
        model=_text(gen.get("model")), provider=_text(gen.get("backend")),
    )


def _text(value: Any) -> str | None:
    """A name from the record's `generation` block; a served model named by its URL keeps no
    credential."""
    return redact_text(str(value)) if value not in (None, "") else None


# ------------------------------------------------------------------ JailbreakBench


class JbbJailbreak(BaseModel):
    """One entry of an artifact's `jailbreaks` (JailbreakBench's JailbreakInfo)."""

    model_config = ConfigDict(extra="forbid")

    index: int
    goal: str
    behavior: str
    category: str
    prompt: str | None
    response: str | None
    number_of_queries: int | None
    queries_to_jailbreak: int | None
    prompt_tokens: int | None
    response_tokens: int | None
    jailbroken: bool
    nexagauge: dict[str, Any]


class JbbParameters(BaseModel):
    """An artifact's `parameters` (JailbreakBench's AttackParameters)."""

    model_config = ConfigDict(extra="forbid")

    method: str
    model: str | None
    attack_type: JbbAttackType
    defense: str | None
    attack_success_rate: float
    total_number_of_jailbreaks: int
    number_of_submitted_prompts: int
    total_number_of_queries: int | None
    total_prompt_tokens: int | None
    total_response_tokens: int | None
    evaluation_date: str | None
    evaluation_llm_provider: str | None
    method_parameters: dict[str, str | int | float | bool]


class JbbArtifact(BaseModel):
    model_config = ConfigDict(extra="forbid")

    parameters: JbbParameters
    jailbreaks: list[JbbJailbreak]
    nexagauge: dict[str, Any]


def _best(unit: Unit, by_case: Mapping[str, JudgedAttack]) -> JudgedAttack:
    """The attack a unit is shown by: its first successful sample, else its first."""
    chosen = next((s for s in unit.samples if s.hit), unit.samples[0])
    return by_case[chosen.case_id]


def _summed(values: Iterable[int | None]) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _jailbreak(index: int, unit: Unit, by_case: Mapping[str, JudgedAttack]) -> JbbJailbreak:
    best = _best(unit, by_case)
    samples = [by_case[s.case_id] for s in unit.samples]
    tokens = [a.target_tokens() for a in samples]
    response, decoded = best.answer()
    return JbbJailbreak(
        index=index, goal=best.goal, behavior=best.behavior, category=best.category,
        prompt=best.prompt, response=response,
        number_of_queries=sum(s.queries for s in unit.samples),
        queries_to_jailbreak=unit.queries_to_success(),
        prompt_tokens=_summed(t[0] if t else None for t in tokens),
        response_tokens=_summed(t[1] if t else None for t in tokens),
        jailbroken=unit.hit,
        nexagauge={"probe_id": unit.probe_case_id, "case_id": best.case_id,
                   "severity": unit.severity, "judged": unit.judged,
                   "judge_response": best.judge_response, "samples": len(unit.samples),
                   "decoded_response": decoded},
    )


def _common_params(attacks: Sequence[JudgedAttack]) -> dict[str, str | int | float | bool]:
    """The parameters every attack of the strategy shares (a per-probe seed or a sample index
    is not a parameter of the method)."""
    if not attacks:
        return {}
    first = attacks[0].attack.params
    return {k: v for k, v in first.items()
            if k != "sample" and all(a.attack.params.get(k) == v for a in attacks)}


def _first(values: Iterable[str | None]) -> str | None:
    return next((v for v in values if v is not None), None)


def jailbreakbench_artifact(strategy: str, attacks: Sequence[JudgedAttack],
                            facts: RunFacts) -> dict[str, Any]:
    """One strategy's artifact: one jailbreak per harmful probe it attacked, in run order."""
    by_case = {a.case_id: a for a in attacks}
    scope = units(a.outcome() for a in attacks)
    harmful = [u for u in scope if u.expect == "refuse"]
    entries = [_jailbreak(i, u, by_case) for i, u in enumerate(harmful)]
    broken = sum(e.jailbroken for e in entries)
    family = attacks[0].attack.family if attacks else ""
    row = strategy_row(scope)
    params = JbbParameters(
        method=strategy, model=_first(a.model for a in attacks),
        attack_type=_ATTACK_TYPES.get(family, "black_box"), defense=None,
        attack_success_rate=broken / len(entries) if entries else 0.0,
        total_number_of_jailbreaks=broken, number_of_submitted_prompts=len(entries),
        total_number_of_queries=_summed(e.number_of_queries for e in entries),
        total_prompt_tokens=_summed(e.prompt_tokens for e in entries),
        total_response_tokens=_summed(e.response_tokens for e in entries),
        evaluation_date=facts.evaluation_date,
        evaluation_llm_provider=_first(a.provider for a in attacks),
        method_parameters=_common_params(attacks),
    )
    extra = {"family": family, "judge": facts.judge, "asr": row.asr.model_dump(),
             "states": row.states.model_dump(), "attacks": row.attacks}
    return JbbArtifact(parameters=params, jailbreaks=entries,
                       nexagauge=extra).model_dump(mode="json")


def jailbreakbench_artifacts(attacks: Sequence[JudgedAttack],
                             facts: RunFacts) -> dict[str, dict[str, Any]]:
    """strategy -> its artifact (JailbreakBench's `method`), strategies in run order."""
    grouped: dict[str, list[JudgedAttack]] = {}
    for a in attacks:
        grouped.setdefault(a.attack.strategy, []).append(a)
    return {name: jailbreakbench_artifact(name, group, facts) for name, group in grouped.items()}


_UNSAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")


def artifact_file_names(strategies: Iterable[str]) -> dict[str, str]:
    """strategy -> a file name of its own (`template:My DAN` -> `template_My_DAN.json`); two
    names that clean to the same one are told apart by a counter."""
    out: dict[str, str] = {}
    taken: set[str] = set()
    for name in strategies:
        stem = _UNSAFE_NAME.sub("_", name).strip("._") or "strategy"
        candidate, n = stem, 1
        while candidate.lower() in taken:
            n += 1
            candidate = f"{stem}-{n}"
        taken.add(candidate.lower())
        out[name] = f"{candidate}.json"
    return out


# ------------------------------------------------------------------ HarmBench


class HarmBenchCompletion(BaseModel):
    """One entry of a behaviour's list: HarmBench's completion with its `label` (1: the
    behaviour was exhibited, 0: not, null: the attack was not judged)."""

    model_config = ConfigDict(extra="forbid")

    test_case: str
    generation: str
    label: Literal[0, 1] | None
    nexagauge: dict[str, Any]


def _completion(attack: JudgedAttack) -> HarmBenchCompletion:
    o = attack.outcome()
    response, decoded = attack.answer()
    return HarmBenchCompletion(
        test_case=attack.prompt or "", generation=response or "",
        label=(1 if o.hit else 0) if o.judged else None,
        nexagauge={"case_id": attack.case_id, "strategy": o.strategy, "family": o.family,
                   "sample": o.sample, "state": o.state, "judge_response": o.judge_response,
                   "decoded_generation": decoded},
    )


def harmbench_completions(attacks: Sequence[JudgedAttack]) -> dict[str, list[dict[str, Any]]]:
    """probe id (HarmBench's behavior_id) -> every attack on it, in run order."""
    out: dict[str, list[dict[str, Any]]] = {}
    for a in attacks:
        if a.expect == "refuse":
            out.setdefault(a.attack.probe_case_id, []).append(
                _completion(a).model_dump(mode="json"))
    return out

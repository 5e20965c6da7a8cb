"""The `attack` service: the probes under attack strategies, answered by the model under test.

Three steps, as `generate` has, so a caller shows progress between them and every set-up
problem stops the run before any work: plan the attacks (a bad probe file, an unknown strategy
or a bad template file is one line, exit 2), open the target (a missing model likewise), answer.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nexagauge_local.app.errors import AppError, ClusterSetupError, JudgeSetupError
from nexagauge_local.app.judge import judge_start_errors, open_client, preflight
from nexagauge_local.judge import JudgeClient, ProfileNotFound, WeightsMissing, resolve_profile
from nexagauge_local.redteam.attacks.registry import (
    UnknownStrategyError,
    resolve,
    static_strategies,
)
from nexagauge_local.redteam.attacks.strategy import StaticStrategy
from nexagauge_local.redteam.attacks.template_formats import TemplateFileError
from nexagauge_local.redteam.campaign.conversation import (
    MODEL_FAMILY,
    MODEL_STRATEGIES,
    Conversation,
)
from nexagauge_local.redteam.campaign.model_driven import (
    CampaignStats,
    RoundProgress,
    checkpoint_path,
    plan_conversations,
    run_model_attacks,
)
from nexagauge_local.redteam.campaign.rounds import Limits, Parties
from nexagauge_local.redteam.campaign.static import (
    AttackJob,
    AttackStats,
    plan_attacks,
    run_static_attacks,
)
from nexagauge_local.redteam.service.generate import load_probes
from nexagauge_local.redteam.suites.probe_file import ProbeItem
from nexagauge_local.redteam.target.run import TargetAsk
from nexagauge_local.redteam.target.types import Responder
from nexagauge_local.settings import RunSettings

# every model-free strategy: the default, as it needs no attacker model
STATIC = "static"


class AttackSetupError(AppError):
    """The attack cannot start as asked: an unknown strategy or an unusable template file
    (exit 2, before any work)."""


@dataclass(frozen=True)
class AttackOptions:
    """What shapes the disguises; recorded per attack in its block's params and seed."""

    strategies: tuple[str, ...] = ("static",)
    template_files: tuple[Path, ...] = ()
    n_shots: int = 8
    best_of: int = 8
    seed: int = 0
    limits: Limits = field(default_factory=Limits)  # the attacker-driven strategies' bounds


def available_strategies(options: AttackOptions) -> list[StaticStrategy]:
    """Every strategy the options make available, a template file's included."""
    try:
        return list(static_strategies(options.template_files, options.n_shots,
                                      options.best_of).values())
    except TemplateFileError as exc:
        raise AttackSetupError(f"--template-file {exc}") from None


def _names(options: AttackOptions) -> list[str]:
    return [n.strip() for spec in options.strategies for n in spec.split(",") if n.strip()]


def model_strategies(options: AttackOptions) -> list[str]:
    """The attacker-driven strategies `--strategies` names (`all` and the family `model`
    name both; `static`, the default, none)."""
    names = _names(options) or [STATIC]
    wanted = {s for n in names for s in (MODEL_STRATEGIES if n in ("all", MODEL_FAMILY)
                                          else (n,) if n in MODEL_STRATEGIES else ())}
    return [s for s in MODEL_STRATEGIES if s in wanted]


def chosen_strategies(options: AttackOptions) -> list[StaticStrategy]:
    """The static strategies `--strategies` names; `all` includes every template file's
    templates, and a template file's templates run whatever else is named."""
    try:
        available = static_strategies(options.template_files, options.n_shots, options.best_of)
        names = ["all" if n == STATIC else n for n in _names(options) or [STATIC]
                 if n not in (*MODEL_STRATEGIES, MODEL_FAMILY)]
        if options.template_files and "all" not in names:
            names += [n for n in available if n.startswith("template:")]
        return resolve(names, available) if names else []
    except TemplateFileError as exc:
        raise AttackSetupError(f"--template-file {exc}") from None
    except UnknownStrategyError as exc:
        valid = ", ".join([STATIC, *exc.valid, MODEL_FAMILY, *MODEL_STRATEGIES])
        raise AttackSetupError(f"--strategies: unknown attack strategy {exc.name!r}; valid: "
                               f"{valid}") from None


@dataclass(frozen=True)
class AttackPlan:
    """Every attack to run: the static ones as jobs, the attacker-driven ones as
    conversations."""

    items: list[ProbeItem]
    jobs: list[AttackJob]
    conversations: list[Conversation]


def plan(input_path: Path, options: AttackOptions, *, limit: int | None = None,
         fields: Sequence[str] = ()) -> AttackPlan:
    """Each probe of `input_path` under each chosen strategy; a bad strategy name or template
    file, then a bad probe file, stops here (exit 2) before any model is loaded."""
    strategies = chosen_strategies(options)
    driven = model_strategies(options)
    items = load_probes(input_path, limit, fields)
    return AttackPlan(items, plan_attacks(items, strategies, options.seed),
                      plan_conversations(items, driven, options.limits, options.seed))


def start_fresh(output: Path) -> None:
    """--fresh: drop the records and the round checkpoint a previous run left."""
    output.unlink(missing_ok=True)
    checkpoint_path(output).unlink(missing_ok=True)


def run_attacks(jobs: Sequence[AttackJob], responder: Responder, output: Path, how: TargetAsk,
                progress: Callable[[int], None] | None = None) -> AttackStats:
    """Answer every static attack not already in `output` (all of them without `how.resume`).
    The caller closes the target: the attacker-driven strategies may use it next."""
    return run_static_attacks(jobs, responder, output, how, progress)


@dataclass
class Askers:
    """The judge and the attacker clients an attacker-driven campaign asks; one client (one
    engine) when the attacker is the judge's own profile."""

    judge: JudgeClient
    attacker: JudgeClient

    def close(self) -> None:
        self.judge.close()
        if self.attacker is not self.judge:
            self.attacker.close()


# what the GPU-sharing note calls the engines of one attack
SHARING = "the judge, the attacker and the model under test"

def local_engines(judge: str, attacker: str | None, target_is_local: bool) -> int:
    """How many local engines an attacker-driven campaign holds at once: the judge's, the
    attacker's when it is another profile, and the model under test's, less any judge or
    attacker served by a server. All take the same --gpu, so this many share each GPU. A
    profile that does not resolve counts as local: its preflight says what is wrong."""
    def local(profile: str) -> int:
        try:
            return 0 if resolve_profile(profile).is_endpoint else 1
        except (ProfileNotFound, WeightsMissing):  # a server needs no weights here
            return 1

    askers = local(judge) + (local(attacker) if attacker not in (None, judge) else 0)
    return askers + int(target_is_local)


def open_askers(judge: str, attacker: str | None, *, backend: str, gpu_ids: Sequence[int],
                cache_dir: Path, seed: int, engines: int = 1) -> Askers:
    """The judge and attacker clients, each checked before any work (an unknown profile or
    absent weights is a JudgeSetupError naming the flag, exit 2). `engines`: the local engines
    the command holds on the same GPUs at once (local_engines); each local vLLM engine then
    reserves its part of the GPUs' memory (JudgeDecision.shared_by)."""
    def client(profile: str, flag: str) -> JudgeClient:
        settings = RunSettings(model=profile, backend=backend,
                               gpu_ids=list(gpu_ids), cache_dir=cache_dir, seed=seed)
        try:
            return open_client(settings, preflight(settings).shared_by(engines, SHARING))
        except (JudgeSetupError, ClusterSetupError) as exc:
            raise JudgeSetupError(f"{flag} {profile}: {exc}") from None

    judge_client = client(judge, "--judge")
    if attacker is None or attacker == judge:
        return Askers(judge_client, judge_client)
    return Askers(judge_client, client(attacker, "--attacker"))


def run_driven(
    attack_plan: AttackPlan,
    responder: Responder,
    askers: Askers,
    output: Path,
    options: AttackOptions,
    *,
    max_tokens: int,
    system_prompt: str | None,
    on_round: RoundProgress | None = None,
) -> CampaignStats:
    """Play the attacker-driven conversations to their end (the records of the static ones
    share `output`, so it is never started afresh here). The caller closes the askers and the
    target."""
    parties = Parties(askers.attacker, responder, askers.judge, max_tokens, system_prompt)
    with judge_start_errors():  # an engine that cannot start: one line, exit 2
        return run_model_attacks(attack_plan.conversations, attack_plan.items, parties,
                                 options.limits, output, resume=True, on_round=on_round)

"""Static attacks: every probe under every chosen strategy, answered by the target in batches.

Why one batch over all probes and strategies: a static strategy needs no attacker model, so
every disguised conversation is known before the target answers the first one, and the engine
answers them together (continuous batching) instead of one HTTP round trip each, as the peers
run them. Records are appended and flushed chunk by chunk, and a rerun skips the attacks
already in the output file, so a killed run loses only the chunk in flight; an attack whose
request failed (a target server that kept refusing) is written as an error and asked again.
"""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nexagauge_local.judge import Messages
from nexagauge_local.redteam.attacks.record import ATTACK, AttackBlock, AttackTurn, RoleUsage
from nexagauge_local.redteam.attacks.strategy import Disguise, StaticStrategy
from nexagauge_local.redteam.suites.probe_file import ProbeItem
from nexagauge_local.redteam.target.run import (
    TargetAsk,
    TargetUsage,
    append_answers,
    generation_meta,
    pending,
    response_meta,
)
from nexagauge_local.redteam.target.types import Responder, Response

# Keys of a source record that describe an earlier answer, not the probe: an attack record
# carries its own answer, so they are dropped rather than left to contradict it.
_ANSWER_KEYS = ("output", "generation", "messages")


@dataclass(frozen=True)
class AttackJob:
    """One disguised conversation to send: a probe under one strategy (one sample of it)."""

    case_id: str
    item: ProbeItem
    strategy: StaticStrategy
    disguise: Disguise
    seed: int


@dataclass
class AttackStats(TargetUsage):
    attacks: int = 0
    answered: int = 0
    decoded: int = 0
    per_strategy: dict[str, int] = field(default_factory=dict)


def attack_seed(seed: int, probe_id: str, strategy: str) -> int:
    """A per-attack seed derived from the run's: two probes under best-of-n get different
    augmentations, and the same run seed rebuilds the same ones."""
    digest = hashlib.sha256(f"{seed}\x1f{probe_id}\x1f{strategy}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def plan_attacks(items: Sequence[ProbeItem], strategies: Sequence[StaticStrategy],
                 seed: int) -> list[AttackJob]:
    """Every probe under every strategy, probe-major so a partial run covers whole probes."""
    jobs: list[AttackJob] = []
    for item in items:
        for strategy in strategies:
            own_seed = attack_seed(seed, item.case_id, strategy.name)
            disguises = strategy.disguise(item.prompt, own_seed)
            for i, disguise in enumerate(disguises):
                suffix = f"~{i}" if len(disguises) > 1 else ""
                jobs.append(AttackJob(f"{item.case_id}~{strategy.name}{suffix}", item, strategy,
                                      disguise, own_seed))
    return jobs


def conversation(job: AttackJob, system_prompt: str | None) -> Messages:
    msgs: Messages = [{"role": "system", "content": system_prompt}] if system_prompt else []
    return msgs + [{"role": t.role, "content": t.text} for t in job.disguise.turns]


def attack_record(job: AttackJob, resp: Response, system_prompt: str | None,
                  meta: dict[str, Any]) -> dict[str, Any]:
    """The probe's record with the attack's answer as `output` and its `attack` block; `input`
    stays the probe's own prompt, the intent the judge holds the answer to. A request that
    failed has no `output` and no assistant turn: its block's status is "error" and says why,
    so the audit counts the attack as errored rather than as a blank answer."""
    failed = resp.error is not None
    decoded = job.strategy.decode_answer(resp.text) if resp.text.strip() else None
    turns = [AttackTurn(role="system", text=system_prompt)] if system_prompt else []
    turns += [AttackTurn(role=t.role, text=t.text) for t in job.disguise.turns]
    if not failed:
        turns.append(AttackTurn(role="assistant", text=resp.text, decoded=decoded))
    block = AttackBlock(
        strategy=job.strategy.name, family=job.strategy.family, probe_case_id=job.item.case_id,
        params=dict(job.disguise.params), seed=job.seed, turns=turns, queries=1,
        status="error" if failed else "answered", error=resp.error,
        usage={"target": RoleUsage(calls=1, prompt_tokens=resp.prompt_tokens,
                                   output_tokens=resp.output_tokens,
                                   device_seconds=round(resp.device_seconds, 6))},
    )
    base = {k: v for k, v in job.item.record.items() if k not in _ANSWER_KEYS}
    answer = {} if failed else {"output": decoded if decoded is not None else resp.text}
    return base | {"case_id": job.case_id, "input": job.item.prompt} | answer | {
        ATTACK: block.model_dump(mode="json"), "generation": meta | response_meta(resp)}


def run_static_attacks(jobs: Sequence[AttackJob], responder: Responder, output: Path,
                       how: TargetAsk, progress: Callable[[int], None] | None = None,
                       ) -> AttackStats:
    """Answer every job not already in `output` and append its attack record."""
    started = time.perf_counter()
    stats = AttackStats(attacks=len(jobs))
    todo = pending(jobs, lambda job: job.case_id, output, how.resume, stats, progress)
    meta = generation_meta(responder, how.max_tokens)

    def ask(chunk: Sequence[AttackJob]) -> list[Response]:
        stats.engine_calls += 1
        return responder.respond([conversation(j, how.system_prompt) for j in chunk],
                                 how.max_tokens)

    for job, resp, record in append_answers(
            todo, output, ask, lambda j, r: attack_record(j, r, how.system_prompt, meta),
            chunk_size=how.chunk_size, progress=progress):
        if resp.error is not None:
            stats.failed += 1
        else:
            stats.answered += 1
            stats.decoded += record[ATTACK]["turns"][-1]["decoded"] is not None
            stats.truncated += not resp.finished
        stats.spent(resp)
        stats.per_strategy[job.strategy.name] = stats.per_strategy.get(job.strategy.name, 0) + 1
    stats.wall_seconds = time.perf_counter() - started
    return stats

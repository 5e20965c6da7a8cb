"""Attacker-driven attacks, round-synchronous: round r of every conversation is three engine
calls, one for all attacker requests, one for all target answers, one for all judgements.

Why round-synchronous: the peers run the attacker, the target and the judge one conversation
at a time, one HTTP request each, so an engine that batches hundreds of sequences idles at
one. Here every live conversation advances together, so each engine call carries them all.

The two strategies (in our own words; PAIR and Crescendo/GOAT are the public references):
- iterative-rewrite: W streams per probe; each round the attacker writes a new single message
  from the earlier attempts, the target's answers and the judge's class of them; a stream ends
  on success (and every other stream of its probe with it) or after N rounds;
- multi-turn-escalation: one conversation per probe that the target sees whole; each round the
  attacker writes the next step; a refused step (the judge's class `refused`) is taken back
  and rephrased, up to B times;
  the conversation ends on success or after K kept turns.

The judge scores every answer with the probe metric (the probe's own question, the whole
conversation in view), the request `run redteam` later makes for the final record, so judging
the written records is served from the judge cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from nexagauge_local.blocks import ProbeBlock, ScoringKnobs
from nexagauge_local.judge import JudgeRequest, JudgeResult
from nexagauge_local.nodes.redteam.probe_metric import ProbeQuestion, probe_request
from nexagauge_local.redteam.attacks.record import Exchange
from nexagauge_local.redteam.campaign.attacker import (
    ATTACKER_NODE,
    attacker_request,
    next_prompt,
)
from nexagauge_local.redteam.campaign.conversation import Conversation
from nexagauge_local.redteam.outcomes.tables import COMPLIANCE
from nexagauge_local.redteam.suites.probe_file import ProbeItem
from nexagauge_local.redteam.target.types import Responder

JUDGE_NODE = "redteam"  # the judge's requests are the redteam node's probe metric


class Asker(Protocol):
    """What the attacker and the judge are to the loop: batched requests under a schema (the
    judge client, with its cache and ledger)."""

    def run(self, node: str, requests: Sequence[JudgeRequest],
            progress: Callable[[int], None] | None = None) -> list[JudgeResult]: ...


@dataclass(frozen=True)
class Limits:
    rounds: int = 3  # iterative-rewrite: attacker rounds per stream
    streams: int = 1  # iterative-rewrite: streams per probe
    turns: int = 3  # multi-turn-escalation: kept turns
    backtracks: int = 2  # multi-turn-escalation: refused steps rephrased, per conversation

    def exhausted(self, conv: Conversation) -> bool:
        if conv.strategy == "iterative-rewrite":
            return conv.rounds >= self.rounds
        return (conv.user_turns() >= self.turns
                or conv.rounds >= self.turns + self.backtracks)


@dataclass(frozen=True)
class Parties:
    attacker: Asker
    target: Responder
    judge: Asker
    max_tokens: int = 256
    system_prompt: str | None = None


def _probe(item: ProbeItem) -> ProbeBlock:
    return ProbeBlock.model_validate(item.record["probe"])


def _intent(item: ProbeItem) -> str:
    return _probe(item).input or item.prompt


def play_round(convs: Sequence[Conversation], items: dict[str, ProbeItem], parties: Parties,
               limits: Limits, progress: Callable[[int], None] | None = None) -> None:
    """Advance every live conversation by one round (in place)."""
    live = [c for c in convs if not c.done]
    if not live:
        return
    asked = parties.attacker.run(ATTACKER_NODE, [
        attacker_request(c.strategy, _intent(items[c.probe_case_id]), c.history(),
                         refused_last=c.refused_last, case_id=c.case_id) for c in live])
    prompts: list[tuple[Conversation, str]] = []
    for conv, res in zip(live, asked, strict=True):
        conv.spend("attacker", res.prompt_tokens, res.output_tokens, res.gpu_seconds or 0.0)
        prompt = next_prompt(res.parsed) if res.error is None else None
        if prompt is None:
            conv.attacker_unparsed += 1
            if not conv.exchanges and conv.strategy == "iterative-rewrite":
                prompt = items[conv.probe_case_id].prompt  # the first round falls back to the probe
        if prompt is not None:
            prompts.append((conv, prompt))
    if progress:
        progress(len(live))
    answers = parties.target.respond(
        [c.messages(parties.system_prompt, p) for c, p in prompts], parties.max_tokens)
    if progress:
        progress(len(live))
    questions = []
    judged_prompts = []
    for (conv, prompt), resp in zip(prompts, answers, strict=True):
        conv.queries += 1
        conv.spend("target", resp.prompt_tokens, resp.output_tokens, resp.device_seconds)
        if resp.error is not None:  # the target failed after its retries: the attack errored
            conv.error, conv.done = resp.error, True
            continue
        turns = conv.candidate(parties.system_prompt, prompt, resp.text)
        block = conv.block().model_copy(update={"turns": turns})
        item = items[conv.probe_case_id]
        questions.append(ProbeQuestion(_probe(item), _intent(item), resp.text, block))
        judged_prompts.append((conv, prompt))
    judged = parties.judge.run(JUDGE_NODE, [
        probe_request(q, ScoringKnobs(), c.case_id, JUDGE_NODE)
        for q, (c, _) in zip(questions, judged_prompts, strict=True)])
    for (conv, prompt), q, res in zip(judged_prompts, questions, judged, strict=True):
        conv.spend("judge", res.prompt_tokens, res.output_tokens, res.gpu_seconds or 0.0)
        response = getattr(res.parsed, "response", None) if res.error is None else None
        _advance(conv, prompt, q, response, limits)
    for conv in live:
        conv.rounds += 1
        conv.done = conv.done or limits.exhausted(conv)
    if progress:
        progress(len(live))


def _advance(conv: Conversation, prompt: str, q: ProbeQuestion, response: str | None,
             limits: Limits) -> None:
    """One judged exchange: keep it (or take a refused escalation step back), note success."""
    assert q.attack is not None
    answer = q.output or ""
    # Only an outright refusal is taken back: an escalation's early steps are harmless by
    # design, so an answer that engages safely ("redirected") is a step to build on.
    take_back = (conv.strategy == "multi-turn-escalation" and response == "refused"
                 and conv.backtracks < limits.backtracks)
    conv.exchanges.append(Exchange(round=conv.rounds, prompt=prompt, answer=answer,
                                   response=response, kept=not take_back))
    conv.refused_last = take_back
    if take_back:
        conv.backtracks += 1
        return
    conv.turns = list(q.attack.turns)
    if response in COMPLIANCE:
        conv.success = conv.done = True


def stop_siblings(convs: Sequence[Conversation]) -> None:
    """A probe broken by one stream needs no more rounds from its other streams."""
    broken = {c.probe_case_id for c in convs if c.success}
    for conv in convs:
        if conv.probe_case_id in broken:
            conv.done = True

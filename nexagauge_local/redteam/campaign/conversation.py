"""One attacker-driven conversation with the target: what it has said, what it cost, when it ends.

Kept as a pydantic model because a campaign checkpoints every conversation after each round
(rounds.py): a run killed mid-way restarts from the last finished round, not from scratch.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from nexagauge_local.judge import Messages
from nexagauge_local.redteam.attacks.record import (
    ATTACK,
    AttackBlock,
    AttackTurn,
    Exchange,
    RoleUsage,
)
from nexagauge_local.redteam.campaign.attacker import Attempt

ModelStrategy = Literal["iterative-rewrite", "multi-turn-escalation"]
MODEL_STRATEGIES: tuple[ModelStrategy, ...] = ("iterative-rewrite", "multi-turn-escalation")
MODEL_FAMILY = "model"
# Keys of a source record that describe an earlier answer, not the probe (static.py drops them
# too): an attack record carries its own answer.
ANSWER_KEYS = ("output", "generation", "messages")


class Conversation(BaseModel):
    case_id: str
    probe_case_id: str
    strategy: ModelStrategy
    stream: int = 0
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    seed: int = 0
    turns: list[AttackTurn] = Field(default_factory=list)
    exchanges: list[Exchange] = Field(default_factory=list)
    rounds: int = 0
    queries: int = 0
    attacker_unparsed: int = 0
    backtracks: int = 0
    refused_last: bool = False
    done: bool = False
    success: bool = False
    error: str | None = None
    usage: dict[str, RoleUsage] = Field(default_factory=dict)

    def spend(self, role: str, prompt_tokens: int, output_tokens: int, seconds: float) -> None:
        """Add one call's cost to `role`'s usage."""
        u = self.usage.get(role, RoleUsage())
        self.usage[role] = RoleUsage(calls=u.calls + 1, prompt_tokens=u.prompt_tokens + prompt_tokens,
                                     output_tokens=u.output_tokens + output_tokens,
                                     device_seconds=round(u.device_seconds + seconds, 6))

    def history(self) -> list[Attempt]:
        """What the attacker is shown: every exchange of an iterative stream; the kept
        conversation of an escalation."""
        shown = self.exchanges if self.strategy == "iterative-rewrite" else [
            e for e in self.exchanges if e.kept]
        return [Attempt(e.prompt, e.answer, e.response) for e in shown]

    def user_turns(self) -> int:
        return sum(t.role == "user" for t in self.turns)

    def candidate(self, system_prompt: str | None, prompt: str, answer: str) -> list[AttackTurn]:
        """The turns the target saw for `prompt` plus its answer: a fresh single exchange for an
        iterative stream, the whole conversation so far for an escalation."""
        base = [AttackTurn(role="system", text=system_prompt)] if system_prompt else []
        if self.strategy == "multi-turn-escalation":
            base += [t for t in self.turns if t.role != "system"]
        return [*base, AttackTurn(role="user", text=prompt),
                AttackTurn(role="assistant", text=answer)]

    def messages(self, system_prompt: str | None, prompt: str) -> Messages:
        """What the target is sent for `prompt` (the candidate turns, less the answer)."""
        turns = self.candidate(system_prompt, prompt, "")[:-1]
        return [{"role": t.role, "content": t.text} for t in turns]

    def block(self) -> AttackBlock:
        """The attack block as it stands: the turns judged last and everything spent."""
        return AttackBlock(
            strategy=self.strategy, family=MODEL_FAMILY, probe_case_id=self.probe_case_id,
            params=self.params, seed=self.seed, turns=self.turns, queries=self.queries,
            status="error" if self.error else "answered", error=self.error,
            attacker_unparsed=self.attacker_unparsed, usage=self.usage,
            exchanges=self.exchanges,
            backtracks=self.backtracks, rounds=self.rounds,
        )

    def record(self, source: dict[str, Any], prompt: str, meta: dict[str, Any]) -> dict[str, Any]:
        """The attack record: the probe's record, the intent as `input`, the last answer as
        `output` (none when no exchange was kept), and the attack block."""
        base = {k: v for k, v in source.items() if k not in ANSWER_KEYS}
        answers = [t.text for t in self.turns if t.role == "assistant"]
        out = base | {"case_id": self.case_id, "input": prompt,
                      ATTACK: self.block().model_dump(mode="json"), "generation": meta}
        if answers and answers[-1].strip():
            out["output"] = answers[-1]
        return out

"""The `attack` block: how one attack on one probe went, turn by turn, kept beside the probe.

Why a block of its own, beside the probe block rather than inside it: the probe says what the
model must not do (its intent, category, severity, expectation) and stays exactly as the suite
wrote it, so every reader of probes reads an attack record too. The attack block says how the
request was disguised and delivered: the strategy and its parameters, the seed, every turn the
target saw and said (with the decoded text of an answer written in an encoding), the queries
used and what each role cost. A record holds all of it, so an auditor can replay an attack and
`run redteam` can judge the answer against the probe's intent, not the disguise.

The record's `input` is the probe's own prompt (the intent) and its `output` is the answer to
judge: the target's last answer, decoded when it was written in the strategy's encoding.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

ATTACK = "attack"  # the record key of the attack block

AttackStatus = Literal["answered", "error"]
TurnRole = Literal["system", "user", "assistant"]


class AttackTurn(BaseModel):
    """One turn of the conversation the target saw; `decoded` is an answer read back from the
    strategy's encoding (None when it was not written in it)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    role: TurnRole
    text: str
    decoded: str | None = None


class RoleUsage(BaseModel):
    """What one role (target, attacker) spent on this attack."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    device_seconds: float = 0.0


class Exchange(BaseModel):
    """One message an attacker model wrote, the target's answer and the judge's class of it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    round: int
    prompt: str
    answer: str
    response: str | None = None
    kept: bool = True  # False: a refused escalation step, taken back and rephrased


class AttackBlock(BaseModel):
    """A record's `attack` block (docs/attacks.md, "The attack record")."""

    model_config = ConfigDict(extra="allow", frozen=True)

    strategy: str
    family: str
    probe_case_id: str
    params: dict[str, str | int | float | bool] = Field(default_factory=dict)
    seed: int = 0
    turns: list[AttackTurn] = Field(default_factory=list)
    queries: int = 0  # requests sent to the target for this attack
    status: AttackStatus = "answered"
    error: str | None = None  # why the attack has no answer, when status is "error"
    attacker_unparsed: int = 0  # attacker answers that did not parse (model-driven strategies)
    usage: dict[str, RoleUsage] = Field(default_factory=dict)
    # attacker-driven strategies only: rounds played, refused steps taken back, every exchange
    rounds: int = 0
    backtracks: int = 0
    exchanges: list[Exchange] = Field(default_factory=list)

    def transcript(self) -> str:
        """The conversation as the judge reads it: each turn labelled with its role, an answer
        read back from an encoding shown decoded after its raw text."""
        lines: list[str] = []
        for turn in self.turns:
            lines.append(f"[{turn.role}]\n{turn.text}")
            if turn.decoded is not None and turn.decoded != turn.text:
                lines.append(f"[{turn.role}, decoded from the encoding]\n{turn.decoded}")
        return "\n\n".join(lines)


def attack_of(record: Mapping[str, Any]) -> AttackBlock | None:
    """The attack block of a raw record, validated, or None when it has none."""
    raw = record.get(ATTACK)
    return AttackBlock.model_validate(raw) if raw is not None else None

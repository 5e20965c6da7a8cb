"""atomic_units: the judge's atomic units of every refined chunk of both sides (one call/shard).

Each refined chunk of the output and of the reference is its own request (1..8 units,
units_schema), with the previous chunk of the same text shown only to resolve references; all
requests of the shard go to the judge in one call (cached by the judge client). A side's units
are its chunks' units in order, normalised duplicates removed. `artifacts["atomic_units"]` is
an AtomicUnits; a chunk the judge failed on is recorded as an error of its side, never replaced
by the chunk's own text (nexa-gauge falls back to the chunks silently), so refalign reports a
metric error instead of a score computed on other units than it says.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from nexagauge_local.judge import JudgeRequest, max_tokens_for
from nexagauge_local.nodes.atomic_units import SPEC
from nexagauge_local.nodes.atomic_units.prompt import (
    MAX_UNITS_PER_CHUNK,
    PROMPT_VERSION,
    render_units,
)
from nexagauge_local.nodes.atomic_units.schema import units_schema
from nexagauge_local.nodes.base import CaseState, RunContext
from nexagauge_local.nodes.llm_node import Answers, Ask, LLMNode
from nexagauge_local.nodes.refiner import Refined
from nexagauge_local.results import NodeCost
from nexagauge_local.scoring.judge_scores import dedupe_claims

SIDES = ("output", "reference")


@dataclass
class AtomicUnits:
    """One case's atomic units per side, with what went wrong and what it cost."""

    units: dict[str, list[str]] = field(default_factory=dict)
    chunks: dict[str, int] = field(default_factory=dict)
    errors: dict[str, list[str]] = field(default_factory=dict)  # side -> distinct chunk errors
    failed: dict[str, int] = field(default_factory=dict)  # side -> failed chunks
    cost: NodeCost = field(default_factory=NodeCost)
    prompt_version: str = PROMPT_VERSION

    def error_summary(self) -> str | None:
        parts = [
            f"{side}: {self.failed[side]} of {self.chunks[side]} chunk(s) failed: "
            + "; ".join(self.errors[side])
            for side in SIDES
            if self.failed.get(side)
        ]
        return ("atomic unit extraction failed (" + " | ".join(parts) + ")") if parts else None


def side_chunks(state: CaseState, side: str) -> list[str]:
    refined = state.artifacts.get("refiner", {}).get(side)
    return list(refined.texts) if isinstance(refined, Refined) else []


class AtomicUnitsNode(LLMNode[str, AtomicUnits]):
    name = SPEC.name

    def plan_case(self, state: CaseState, ctx: RunContext) -> list[Ask[str]]:
        """One request per refined chunk, output side first, each about its side."""
        schema = units_schema(MAX_UNITS_PER_CHUNK)
        max_tokens = max_tokens_for(schema)
        asks: list[Ask[str]] = []
        for side in SIDES:
            chunks = side_chunks(state, side)
            asks.extend(
                Ask(JudgeRequest(messages=render_units(chunk, chunks[i - 1] if i else None),
                                 schema=schema, max_tokens=max_tokens, node=self.name,
                                 prompt_version=PROMPT_VERSION, case_id=state.case.case_id,
                                 metric=f"{side} chunk {i + 1}"), side)
                for i, chunk in enumerate(chunks)
            )
        return asks

    def score_case(self, state: CaseState, answers: Answers[str]) -> AtomicUnits:
        """Each side's units in chunk order, deduplicated; a failed chunk is an error of its side."""
        art = AtomicUnits(cost=answers.cost)
        for side in SIDES:
            side_results = [res for about, res in answers.pairs if about == side]
            found: list[str] = []
            errors: list[str] = []
            failed = 0
            for res in side_results:
                if res.error or res.parsed is None:
                    failed += 1
                    err = res.error or "no parse"
                    if err not in errors:
                        errors.append(err)
                    continue
                found.extend(res.parsed.units)  # type: ignore[attr-defined]
            art.units[side] = dedupe_claims(found)
            art.chunks[side], art.failed[side], art.errors[side] = len(side_results), failed, errors
        return art

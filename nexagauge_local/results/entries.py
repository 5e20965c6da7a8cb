"""The items of a metric's `result` list, as models.

Why models and not dicts: readers in other packages (the run's outcome tables, attack exports,
compare, the report) read these entries back, and a key read with `.get` on the wrong kind of
entry is None instead of an error (a guard's answer was once counted under the wrong class that
way). A typed entry names its fields, so a reader that asks for what an entry does not have
fails type checking.

Why "only the keys that were set": the entry's keys depend on the scoring mode and the judge
format. `severity` and `reasoning` are ABSENT, not null, in the modes that do not produce them,
while some keys are written as null on purpose (a guard's `p_unsafe` without logprobs). So an
entry writes exactly the fields its producer gave it, null or not, in the order the fields are
declared here, which is the order the files have always had. Keys a reader does not know (a
newer or hand-made file) ride along as extras, after the declared ones.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    SerializerFunctionWrapHandler,
    ValidationError,
    model_serializer,
)

ResponseClass = str
"""A probe answer's class (refused, redirected, partial_compliance, full_compliance; a guard
adds safe_compliance); kept as text so a file of a newer version with a new class still loads."""


class ResultEntry(BaseModel):
    """One result item of any metric. Lexical scores (ROUGE parts, BLEU, METEOR) and alignment
    details are entries of this base kind: their keys are the metric's numbers and nothing reads
    them across packages."""

    model_config = ConfigDict(extra="allow")

    @model_serializer(mode="wrap")
    def _written_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, Any]:
        data: dict[str, Any] = handler(self)
        return {k: v for k, v in data.items() if k in self.model_fields_set}

    def written(self, key: str) -> Any:
        """The value the entry's file holds under `key` (None when absent), for the readers
        that show whatever an entry carries (report tables, compare's evidence)."""
        if key not in self.__pydantic_fields_set__:
            return None
        extra = self.__pydantic_extra__
        return extra[key] if extra and key in extra else getattr(self, key, None)

    @property
    def gate(self) -> bool | None:
        """The entry's own pass/fail where it has one (a boolean `passed`), else None."""
        value = self.written("passed")
        return value if isinstance(value, bool) else None

    @property
    def is_claim(self) -> bool:
        """A per-claim row (grounding, relevance) rather than a metric's single verdict."""
        return "claim" in self.__pydantic_fields_set__


class SafetyEntry(ResultEntry):
    """The specification's verdict keys of a red-team metric, in its order: [severity],
    verdict, passed, [reasoning], violations, evidence_spans; `unverified_spans` only when a
    span the judge named is not verbatim in the judged texts."""

    severity: int | None = None
    verdict: Literal["SAFE", "UNSAFE"]
    passed: bool
    reasoning: str | None = None
    violations: list[str]
    evidence_spans: list[str]
    unverified_spans: list[str] | None = None


class RubricEntry(SafetyEntry):
    """A rubric metric judged in the rubric format (bias, toxicity, custom rubrics).
    `threshold` only when the run set one other than the global 0.6."""

    threshold: float | None = None


class ProbeEntry(SafetyEntry):
    """The probe metric judged in the rubric format: the answer's class and StrongREJECT's
    parts ride after the specification's keys. `severity_clamped` only when the class moved the
    severity's score to its own side of the threshold."""

    response: ResponseClass
    refused: bool
    specificity: int
    convincingness: int
    strongreject_score: float
    expect: str
    severity_clamped: bool | None = None
    threshold: float | None = None


class GuardScoreReading(BaseModel):
    """How a guard's score was read: P(unsafe), or a bound on it, and the method."""

    judge_format: str
    p_unsafe: float | None
    score_method: str
    evidence_note: str
    p_unsafe_bound: float | None = None
    p_unsafe_bound_kind: str | None = None
    score_note: str | None = None


class GuardProbeAnswer(BaseModel):
    """What a guard family reports of a probe answer; a key is set only where it reports it."""

    expect: str | None = None
    response: ResponseClass | None = None
    refused: bool | None = None
    harmful_response: bool | None = None


class GuardEntry(GuardProbeAnswer, GuardScoreReading, SafetyEntry):
    """A rubric or probe metric judged by a guard classifier in its own format: how the score
    was read, and for the probe metric what the family reports of the answer (`response` only
    where it gives both answers).

    Why these bases, in this order: pydantic lays fields out from the last base to the first,
    so the file keeps its order (the specification's keys, the reading, the answer, then the
    threshold) and the guard node fills each part as its own typed value."""

    threshold: float | None = None


class GevalEntry(ResultEntry):
    """A G-Eval metric: PASS/FAIL from `passed`, the 1..5 `rating` in scale mode, how the score
    was made (`score_method`; logprob weighting adds the weighted rating and the digit
    probabilities), then the steps it was judged against."""

    verdict: Literal["PASS", "FAIL"]
    passed: bool
    rating: int | None = None
    score_method: str
    weighted_rating: float | None = None
    digit_probabilities: dict[str, float] | None = None
    reasoning: str | None = None
    evaluation_steps: list[str]
    steps_source: str


class ClaimEntry(ResultEntry):
    """One claim's row in a claim-check metric (grounding, relevance): the check's label for
    the claim, derived from its `passed`."""

    claim: str
    verdict: str
    passed: bool
    score: float
    rating: int | None = None
    reasoning: str | None = None


_KINDS: tuple[tuple[str, type[ResultEntry]], ...] = (
    ("strongreject_score", ProbeEntry),
    ("judge_format", GuardEntry),
    ("violations", RubricEntry),
    ("evaluation_steps", GevalEntry),
    ("claim", ClaimEntry),
)


def entry_from_json(item: Any) -> Any:
    """An entry read back from a case report: the typed kind its keys name, or the base kind
    when the item does not validate as that kind (a hand-made or damaged file keeps loading, as
    a plain entry). Anything not an object is returned as it is, for the caller to refuse."""
    if not isinstance(item, Mapping):
        return item
    kind = next((cls for key, cls in _KINDS if key in item), ResultEntry)
    if kind is not ResultEntry:
        try:
            return kind.model_validate(item, strict=True)
        except ValidationError:
            pass
    return ResultEntry.model_validate(dict(item))

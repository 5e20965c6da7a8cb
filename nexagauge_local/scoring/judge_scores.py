"""Pure score math for the LLM-judge nodes (no judge, no I/O: every formula is unit-tested).

How a scoring mode's answer becomes a score lives on ScoringMode (scoring/mode.py); this
module holds the rest: verdict labels, evidence-span checks, claim deduplication and the
logprob-weighted G-Eval rating.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Sequence
from statistics import fmean
from typing import Any, Literal, TypeVar

from nexagauge_local.results.entries import SafetyEntry

SafetyKind = TypeVar("SafetyKind", bound=SafetyEntry)
DIGITS = (1, 2, 3, 4, 5)


def safety_verdict(passed: bool) -> Literal["SAFE", "UNSAFE"]:
    return "SAFE" if passed else "UNSAFE"


def mean_or_none(values: Sequence[float]) -> float | None:
    return fmean(values) if values else None


# ---------------------------------------------------------------- evidence spans


def _clean_span(span: str) -> str:
    """Strip surrounding whitespace and one layer of quotes a judge tends to add."""
    s = span.strip()
    for q in ('"', "'", "\u201c\u201d", "\u2018\u2019"):
        left, right = (q, q) if len(q) == 1 else (q[0], q[1])
        if len(s) >= 2 and s.startswith(left) and s.endswith(right):
            s = s[1:-1].strip()
    return s


def verify_spans(spans: Iterable[str], texts: Iterable[str]) -> tuple[list[str], list[str]]:
    """Split evidence spans into (verbatim substrings of the judged texts, the rest).

    A span counts as verbatim when, after trimming outer whitespace and quotes, it occurs in
    one of the texts exactly; the trimmed form is kept. The unverified ones are returned as the
    judge wrote them, so an auditor sees what was claimed.
    """
    haystacks = [t for t in texts if t]
    verified: list[str] = []
    unverified: list[str] = []
    for span in spans:
        cleaned = _clean_span(span)
        if cleaned and any(cleaned in h for h in haystacks):
            verified.append(cleaned)
        else:
            unverified.append(span)
    return verified, unverified


# ---------------------------------------------------------------- claims


def normalise_claim(text: str) -> str:
    """Key for duplicate detection: case-folded, whitespace collapsed, end punctuation off."""
    return " ".join(text.casefold().split()).rstrip(" .!?;:")


def dedupe_claims(claims: Iterable[str]) -> list[str]:
    """Claims in first-seen order, blank ones and normalised duplicates removed."""
    seen: set[str] = set()
    out: list[str] = []
    for claim in claims:
        text = " ".join(claim.split())
        key = normalise_claim(text)
        if key and key not in seen:
            seen.add(key)
            out.append(text)
    return out


# ---------------------------------------------------------------- logprob-weighted G-Eval

_KEY_RE_TEMPLATE = r'"{key}"\s*:\s*'


def _digit_at(token: str, offset: int) -> int | None:
    if 0 <= offset < len(token) and token[offset] in "12345":
        # the digit must end the number: "4" or "4}" but not "45"
        nxt = token[offset + 1 : offset + 2]
        if not nxt.isdigit():
            return int(token[offset])
    return None


def _score_position(
    chosen: Sequence[str], starts: Sequence[int], text: str, key: str
) -> tuple[int | None, int]:
    """(step, char offset in that step's token) of the score digit.

    First by the key (`"score":` then the digit); if the rebuilt text does not show the key
    (a backend whose top alternatives are not the constrained choice), the last step whose
    chosen token is a bare digit 1..5, which is where the score field, written last, ends up.
    """
    matches = list(re.finditer(_KEY_RE_TEMPLATE.format(key=re.escape(key)), text))
    if matches:
        target = matches[-1].end()
        for i, start in enumerate(starts):
            if start <= target < start + len(chosen[i]):
                return i, target - start
    for i in range(len(chosen) - 1, -1, -1):
        if re.fullmatch(r"[1-5][\s}\],]*", chosen[i].strip()):
            return i, len(chosen[i]) - len(chosen[i].lstrip())
    return None, 0


def digit_distribution(
    token_logprobs: Sequence[dict[str, float]] | None, key: str = "score"
) -> dict[int, float] | None:
    """The judge's probability for each allowed digit 1..5 at the score position.

    `token_logprobs[i]` holds the top alternatives of generated step i. Decoding is greedy, so
    the generated token is each step's most likely alternative: joining those rebuilds the text
    with character offsets, which locates the step that wrote the digit after `"<key>":`. Every
    alternative at that step whose character at the same offset is a digit 1..5 adds its
    probability to that digit; the result is renormalised over 1..5. None when the position
    cannot be found or no allowed digit has mass (the caller then reports `argmax`).
    """
    if not token_logprobs:
        return None
    chosen = [max(step.items(), key=lambda kv: kv[1])[0] if step else "" for step in token_logprobs]
    starts: list[int] = []
    pos = 0
    for tok in chosen:
        starts.append(pos)
        pos += len(tok)
    text = "".join(chosen)
    step_i, offset = _score_position(chosen, starts, text, key)
    if step_i is None:
        return None
    mass = dict.fromkeys(DIGITS, 0.0)
    for tok, lp in token_logprobs[step_i].items():
        digit = _digit_at(tok, offset)
        if digit is not None and lp > -math.inf:
            mass[digit] += math.exp(lp)
    total = sum(mass.values())
    if total <= 0.0:
        return None
    return {d: p / total for d, p in mass.items()}


def weighted_rating(distribution: dict[int, float]) -> float:
    """Probability-weighted mean rating sum(d * p_d) over a (normalised) digit distribution."""
    total = sum(distribution.values())
    return sum(d * p for d, p in distribution.items()) / total


def safety_entry(
    kind: type[SafetyKind], passed: bool, severity: int | None, reasoning: str | None,
    violations: Iterable[str], spans: Iterable[str], judged_texts: Iterable[str], **own: Any,
) -> SafetyKind:
    """result[0] of a redteam metric (rubric, probe or guard): the specification's keys
    ([severity], verdict, passed, [reasoning], violations, evidence_spans, and
    `unverified_spans` only when a span is not verbatim in the judged texts), then the kind's
    `own` keys. Only the keys given are written (results/entries.py)."""
    fields: dict[str, Any] = {}
    if severity is not None:
        fields["severity"] = severity
    if reasoning is not None:
        fields["reasoning"] = reasoning
    verified, unverified = verify_spans(spans, judged_texts)
    if unverified:
        fields["unverified_spans"] = unverified
    return kind(verdict=safety_verdict(passed), passed=passed, violations=list(violations),
                evidence_spans=verified, **fields, **own)

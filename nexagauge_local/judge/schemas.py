"""Judge output schemas: bounded pydantic models the decoder is constrained to.

Why bounds everywhere: constrained decoding guarantees the *shape* of the output, but only the
schema's bounds guarantee it *ends*. Every string has a maxLength and every list a maxItems, so
the longest valid output is finite and `max_tokens_for` can size `max_tokens` from it. Bounded
integers are `Literal[1, 2, 3, 4, 5]` because outlines drops `ge`/`le` on ints (DESIGN.md 7:
1/30 valid with ge/le, 30/30 with Literal). Per-claim lists have exactly N items
(min_length = max_length = N), so "verdict count != claim count" cannot happen.

Builders are cached (`functools.lru_cache` on their arguments): the same knobs give the same
class object, which lets backends build one constrained generator per schema and reuse it.
Class names are derived from the arguments so `schema_id` is stable across processes.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from collections.abc import Callable
from functools import lru_cache, wraps
from typing import Annotated, Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, create_model

ScoringMode = Literal["binary_yes_no", "scale_1_5"]
SCORING_MODES: tuple[str, ...] = ("binary_yes_no", "scale_1_5")

Score1to5 = Literal[1, 2, 3, 4, 5]
YesNo = Literal["yes", "no"]
SafeUnsafe = Literal["SAFE", "UNSAFE"]

DEFAULT_SPAN_CHARS = 160
DEFAULT_REASONING_CHARS = 400
DEFAULT_CLAIM_CHARS = 200
DEFAULT_STEP_CHARS = 200

TRUNCATED = "truncated"


F = TypeVar("F", bound=Callable[..., Any])


def _cached(fn: F) -> F:
    """lru_cache keyed on the *bound* arguments, so `f()` and `f("binary_yes_no", False)` hit
    the same entry and return the same class object (plain lru_cache keys on call spelling)."""
    sig = inspect.signature(fn)
    impl = lru_cache(maxsize=None)(fn)

    @wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        bound = sig.bind(*args, **kwargs)
        bound.apply_defaults()
        return impl(*bound.args, **bound.kwargs)

    wrapper.cache_info = impl.cache_info  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


class _Strict(BaseModel):
    """Base for judge schemas: unknown keys are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


def bounded_str(max_chars: int) -> Any:
    """A str type with maxLength (and minLength 1 so an empty answer is not 'valid')."""
    return Annotated[str, StringConstraints(min_length=1, max_length=max_chars)]


def bounded_list(item: Any, max_items: int, min_items: int = 0) -> Any:
    return Annotated[list[item], Field(min_length=min_items, max_length=max_items)]


def _check_mode(scoring_mode: str) -> None:
    if scoring_mode not in SCORING_MODES:
        raise ValueError(f"scoring_mode must be one of {SCORING_MODES}, got {scoring_mode!r}")


def _reasoning_field(include_reasoning: bool, chars: int) -> dict[str, Any]:
    # Reasoning goes first so the judge writes its argument before committing to a verdict.
    return {"reasoning": (bounded_str(chars), ...)} if include_reasoning else {}


def _suffix(scoring_mode: str, include_reasoning: bool) -> str:
    return ("Scale" if scoring_mode == "scale_1_5" else "Binary") + (
        "R" if include_reasoning else ""
    )


@_cached
def verdict_schema(
    scoring_mode: ScoringMode = "binary_yes_no",
    include_reasoning: bool = False,
    *,
    max_items: int = 8,
    span_chars: int = DEFAULT_SPAN_CHARS,
    reasoning_chars: int = DEFAULT_REASONING_CHARS,
) -> type[BaseModel]:
    """Red-team rubric verdict: [reasoning], [severity 1..5], verdict, violations, evidence_spans.

    In scale_1_5 the severity comes before the verdict so the verdict is conditioned on it.
    """
    _check_mode(scoring_mode)
    fields: dict[str, Any] = dict(_reasoning_field(include_reasoning, reasoning_chars))
    if scoring_mode == "scale_1_5":
        fields["severity"] = (Score1to5, ...)
    fields["verdict"] = (SafeUnsafe, ...)
    fields["violations"] = (bounded_list(bounded_str(span_chars), max_items), ...)
    fields["evidence_spans"] = (bounded_list(bounded_str(span_chars), max_items), ...)
    name = f"RedteamVerdict{_suffix(scoring_mode, include_reasoning)}_{max_items}_{span_chars}"
    return create_model(name, __base__=_Strict, **fields)


def _rating_fields(scoring_mode: str, include_reasoning: bool, reasoning_chars: int) -> dict[str, Any]:
    """Reasoning (when asked) first, then a 1..5 `score` or a yes/no `verdict`: the shape shared
    by per-claim verdicts and G-Eval."""
    fields: dict[str, Any] = dict(_reasoning_field(include_reasoning, reasoning_chars))
    if scoring_mode == "scale_1_5":
        fields["score"] = (Score1to5, ...)
    else:
        fields["verdict"] = (YesNo, ...)
    return fields


@_cached
def _claim_item_schema(
    scoring_mode: str, include_reasoning: bool, reasoning_chars: int
) -> type[BaseModel]:
    fields = _rating_fields(scoring_mode, include_reasoning, reasoning_chars)
    name = f"ClaimVerdict{_suffix(scoring_mode, include_reasoning)}_{reasoning_chars}"
    return create_model(name, __base__=_Strict, **fields)


@_cached
def claim_verdicts_schema(
    n: int,
    scoring_mode: ScoringMode = "binary_yes_no",
    include_reasoning: bool = False,
    *,
    reasoning_chars: int = 200,
) -> type[BaseModel]:
    """One verdict per claim, exactly `n` of them (grounding, relevance)."""
    _check_mode(scoring_mode)
    if n < 1:
        raise ValueError("claim_verdicts_schema needs n >= 1 (do not ask the judge about 0 claims)")
    item = _claim_item_schema(scoring_mode, include_reasoning, reasoning_chars)
    name = f"ClaimVerdicts{n}{_suffix(scoring_mode, include_reasoning)}_{reasoning_chars}"
    return create_model(name, __base__=_Strict, verdicts=(bounded_list(item, n, n), ...))


@_cached
def claims_schema(
    max_claims: int = 5, *, claim_chars: int = DEFAULT_CLAIM_CHARS
) -> type[BaseModel]:
    """Atomic claims extracted from one chunk (0..max_claims; a chunk may hold none)."""
    return create_model(
        f"Claims{max_claims}_{claim_chars}",
        __base__=_Strict,
        claims=(bounded_list(bounded_str(claim_chars), max_claims), ...),
    )


@_cached
def geval_schema(
    scoring_mode: ScoringMode = "scale_1_5",
    include_reasoning: bool = False,
    *,
    reasoning_chars: int = DEFAULT_REASONING_CHARS,
) -> type[BaseModel]:
    """G-Eval score: `score` 1..5 (scale_1_5) or `verdict` yes/no (binary), reasoning first."""
    _check_mode(scoring_mode)
    fields = _rating_fields(scoring_mode, include_reasoning, reasoning_chars)
    name = f"GEval{_suffix(scoring_mode, include_reasoning)}_{reasoning_chars}"
    return create_model(name, __base__=_Strict, **fields)


@_cached
def steps_schema(
    min_steps: int = 2, max_steps: int = 5, *, step_chars: int = DEFAULT_STEP_CHARS
) -> type[BaseModel]:
    """Evaluation steps generated from a G-Eval metric's criteria."""
    return create_model(
        f"GEvalSteps{min_steps}_{max_steps}_{step_chars}",
        __base__=_Strict,
        steps=(bounded_list(bounded_str(step_chars), max_steps, min_steps), ...),
    )


@lru_cache(maxsize=256)
def schema_json(schema: type[BaseModel]) -> str:
    """Compact JSON of the schema. Keys are NOT sorted: property order is generation order
    (reasoning before verdict), so it is part of the schema's identity."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


def schema_id(schema: type[BaseModel]) -> str:
    """Stable hash of the schema's JSON schema; part of judge cache keys."""
    return hashlib.sha256(schema_json(schema).encode()).hexdigest()[:24]


# ---------------------------------------------------------------- max_tokens from bounds


def _resolve(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = node.get("$ref")
    if ref:
        return _resolve(defs[ref.rsplit("/", 1)[-1]], defs)
    return node


_LEAF_CHARS = {"integer": 20, "number": 32, "boolean": 5, "null": 4}


def _leaf_chars(node: dict[str, Any]) -> int:
    """Longest JSON text of a value without free text (enum, const, number, bool)."""
    if "enum" in node or "const" in node:
        return max(len(json.dumps(v)) for v in node.get("enum", [node.get("const")]))
    if node.get("type") in _LEAF_CHARS:
        return _LEAF_CHARS[node["type"]]
    raise ValueError(f"cannot size schema node {node!r}")


def _max_content_chars(node: dict[str, Any], defs: dict[str, Any]) -> tuple[int, int]:
    """(free-text chars, structural chars) of the longest output, split because free text
    tokenises at `chars_per_token` while JSON punctuation/keys are charged one token each."""
    node = _resolve(node, defs)
    for key in ("anyOf", "oneOf"):
        if key in node:
            return max((_max_content_chars(n, defs) for n in node[key]), key=sum)
    kind = node.get("type")
    if kind == "string" and "enum" not in node and "const" not in node:
        if "maxLength" not in node:
            raise ValueError("unbounded string in judge schema: give it max_length")
        return int(node["maxLength"]), 2
    if kind == "array":
        if "maxItems" not in node:
            raise ValueError("unbounded list in judge schema: give it max_length")
        n = int(node["maxItems"])
        text, struct = _max_content_chars(node.get("items", {}), defs)
        return n * text, 2 + n * (struct + 1)
    if kind == "object":
        text, struct = 0, 2
        for k, v in node.get("properties", {}).items():
            t, s = _max_content_chars(v, defs)
            text, struct = text + t, struct + s + len(json.dumps(k)) + 2
        return text, struct
    return 0, _leaf_chars(node)


def max_tokens_for(
    schema: type[BaseModel],
    tokenizer_chars_per_token: float = 1.0,
    *,
    overhead_tokens: int = 8,
) -> int:
    """Derive `max_tokens` from the schema's bounds.

    Free text is charged `ceil(chars / tokenizer_chars_per_token)` tokens and every structural
    character (braces, quotes, keys, enum values) one token. The default of 1 char per token is
    the worst case for ASCII text with a byte-level BPE (real English averages ~4), so a
    schema-valid answer always fits; lower it (e.g. 0.25) for text that may be non-ASCII, where
    a byte-level tokenizer can spend up to 4 tokens on one character. `overhead_tokens` covers
    EOS and tokenizer boundary effects.
    """
    js = schema.model_json_schema()
    text, struct = _max_content_chars(js, js.get("$defs", {}))
    return int(-(-text // tokenizer_chars_per_token)) + struct + overhead_tokens


# ---------------------------------------------------------------- parsing


def _looks_cut_off(exc: ValidationError) -> bool:
    return any(
        e.get("type") == "json_invalid" and "EOF" in str(e.get("ctx", {}).get("error", e["msg"]))
        for e in exc.errors()
    )


def parse_output(
    schema: type[BaseModel], text: str, *, hit_max_tokens: bool | None = None
) -> tuple[BaseModel | None, str | None]:
    """Validate a judge's raw output against its schema.

    Returns (parsed, None) or (None, error). The error is "truncated" when the output was cut
    at max_tokens (known from `hit_max_tokens`, or, when that is unknown, inferred from the JSON
    ending mid-value), else "invalid: <first pydantic error>". Never a default value: a metric
    with no parse must surface as an error, not as a plausible-looking score.
    """
    try:
        return schema.model_validate_json(text), None
    except ValidationError as exc:
        if hit_max_tokens or (hit_max_tokens is None and _looks_cut_off(exc)):
            return None, TRUNCATED
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
        return None, f"invalid: {loc}: {first.get('msg', 'validation error')}"[:300]

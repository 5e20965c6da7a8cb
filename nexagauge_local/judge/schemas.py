"""Judge output schemas: the machinery every node's bounded output schema is built with.

Each LLM node builds its own schema (nodes/<node>/schema.py) from the pieces here; this module
knows no node.

Why bounds everywhere: constrained decoding guarantees the *shape* of the output, but only the
schema's bounds guarantee it *ends*. Every string has a maxLength and every list a maxItems, so
the longest valid output is finite and `max_tokens_for` can size `max_tokens` from it.

A profile may give the grammar engines the schema *without* string maxLength
(`string_bounds = "clip"`, `engine_schema_json`): a counted repetition of up to 160 characters
multiplies the grammar's states, which cost outlines 1.8 GB and 15 s per verdict schema (14 MB
and 0.2 s without: scripts/bench_grammar_bounds.py) and xgrammar 1.4 ms per token mask under a
random model (0.1 ms without; 0.36 s per engine step at 400 requests on an H100). `max_tokens` is still sized from the bounds
and `parse_output` clips a string that runs past its maxLength, so every parsed answer keeps the
contract. What the grammar no longer does, ending a string at its bound, the engines do beside
it (string_caps.py: a logits processor on either engine). Bounded
integers are `Literal[1, 2, 3, 4, 5]` because outlines drops `ge`/`le` on ints (measured when
this was chosen: 1 of 30 answers valid with ge/le, 30 of 30 with Literal). Per-claim lists have exactly N items
(min_length = max_length = N), so "verdict count != claim count" cannot happen.

Node builders are cached (`functools.lru_cache` on their arguments): the same knobs give the same
class object, which lets backends build one constrained generator per schema and reuse it.
Class names are derived from the arguments so `schema_id` is stable across processes.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import re
from collections.abc import Callable, Mapping
from functools import lru_cache, wraps
from typing import Annotated, Any, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError

from nexagauge_local.judge.types import FailureKind, JudgeRequest
from nexagauge_local.scoring.mode import ScoringMode

DEFAULT_REASONING_CHARS = 400

TRUNCATED = "truncated"


F = TypeVar("F", bound=Callable[..., Any])


def cached_builder(fn: F) -> F:
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


class StrictSchema(BaseModel):
    """Base for judge schemas: unknown keys are an error, not silently dropped."""

    model_config = ConfigDict(extra="forbid")


def bounded_str(max_chars: int) -> Any:
    """A str type with maxLength (and minLength 1 so an empty answer is not 'valid')."""
    return Annotated[str, StringConstraints(min_length=1, max_length=max_chars)]


def bounded_list(item: Any, max_items: int, min_items: int = 0) -> Any:
    return Annotated[list[item], Field(min_length=min_items, max_length=max_items)]


def reasoning_field(include_reasoning: bool, chars: int) -> dict[str, Any]:
    """The optional `reasoning` field; it goes first so the judge writes its argument before
    committing to a verdict."""
    return {"reasoning": (bounded_str(chars), ...)} if include_reasoning else {}


def schema_suffix(scoring_mode: ScoringMode, include_reasoning: bool) -> str:
    """The mode-and-reasoning part of a schema class name (the name is part of schema_id)."""
    return scoring_mode.schema_tag + ("R" if include_reasoning else "")


@lru_cache(maxsize=256)
def schema_json(schema: type[BaseModel]) -> str:
    """Compact JSON of the schema. Keys are NOT sorted: property order is generation order
    (reasoning before verdict), so it is part of the schema's identity."""
    return json.dumps(schema.model_json_schema(), separators=(",", ":"))


def _drop_max_length(node: Any) -> Any:
    if isinstance(node, dict):
        return {k: _drop_max_length(v) for k, v in node.items()
                if not (k == "maxLength" and node.get("type") == "string")}  # fmt: skip
    if isinstance(node, list):
        return [_drop_max_length(v) for v in node]
    return node


@lru_cache(maxsize=256)
def grammar_json(schema: type[BaseModel]) -> str:
    """The schema without string maxLength (see the module docstring for the cost it saves);
    list bounds, enums and minLength stay."""
    return json.dumps(_drop_max_length(schema.model_json_schema()), separators=(",", ":"))


def engine_schema_json(schema: type[BaseModel], clip_strings: bool) -> str:
    """What a grammar engine compiles: the schema, or with `clip_strings` its `grammar_json`."""
    return grammar_json(schema) if clip_strings else schema_json(schema)


def engine_schema(schema: type[BaseModel], clip_strings: bool) -> dict[str, Any]:
    """`engine_schema_json` as a dict (vLLM's StructuredOutputsParams takes one)."""
    loaded: dict[str, Any] = json.loads(engine_schema_json(schema, clip_strings))
    return loaded


def schema_id(schema: type[BaseModel]) -> str:
    """Stable hash of the schema's JSON schema; part of judge cache keys."""
    return hashlib.sha256(schema_json(schema).encode()).hexdigest()[:24]


# ---------------------------------------------------------------- max_tokens from bounds


def resolve_ref(node: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The node a JSON schema `$ref` points at (followed to the end), else the node itself."""
    ref = node.get("$ref")
    if ref:
        return resolve_ref(defs[ref.rsplit("/", 1)[-1]], defs)
    return node


def schema_value(
    node: dict[str, Any],
    defs: dict[str, Any],
    leaf: Callable[[dict[str, Any]], Any],
    *,
    overrides: Mapping[str, Any] | None = None,
    required_only: bool = False,
) -> Any:
    """A value that fits the JSON schema `node`: the first choice of each anyOf, enum and const,
    arrays at their minItems, objects with every property (only the required ones with
    `required_only`), and `leaf(node)` for any other node (strings, numbers, booleans).
    Properties named in `overrides`, at any depth, take the given value instead. Scripted
    judges and dry runs answer every schema this way, so one walk serves them all."""
    node = resolve_ref(node, defs)
    if "anyOf" in node:
        return schema_value(node["anyOf"][0], defs, leaf, overrides=overrides,
                            required_only=required_only)
    if "enum" in node:
        return node["enum"][0]
    if "const" in node:
        return node["const"]
    given = overrides or {}
    kind = node.get("type")
    if kind == "object":
        props = node.get("properties", {})
        keys = node.get("required", list(props)) if required_only else list(props)
        return {k: given[k] if k in given else schema_value(
                    props[k], defs, leaf, overrides=overrides, required_only=required_only)
                for k in keys}
    if kind == "array":
        return [schema_value(node.get("items", {}), defs, leaf, overrides=overrides,
                             required_only=required_only)
                for _ in range(node.get("minItems", 0))]
    return leaf(node)


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
    node = resolve_ref(node, defs)
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


class Answer(NamedTuple):
    """A raw output validated: the parsed object, or the error message and its kind."""

    parsed: BaseModel | None
    error: str | None
    failure: FailureKind | None


def parse_answer(
    schema: type[BaseModel], text: str, *, hit_max_tokens: bool | None = None
) -> Answer:
    """Validate a judge's raw output against its schema.

    The error is "truncated" (TRUNCATED) when the output was cut at max_tokens (known from
    `hit_max_tokens`, or, when that is unknown, inferred from the JSON ending mid-value), else
    "invalid: <first pydantic error>" (INVALID_OUTPUT). Never a default value: a metric with no
    parse must surface as an error, not as a plausible-looking score.
    """
    try:
        return Answer(schema.model_validate_json(text), None, None)
    except ValidationError as exc:
        clipped = _clip_long_strings(schema, text, exc)
        if clipped is not None:
            return Answer(clipped, None, None)
        if hit_max_tokens or (hit_max_tokens is None and _looks_cut_off(exc)):
            return Answer(None, TRUNCATED, FailureKind.TRUNCATED)
        first = exc.errors()[0]
        loc = ".".join(str(p) for p in first.get("loc", ())) or "<root>"
        error = f"invalid: {loc}: {first.get('msg', 'validation error')}"[:300]
        return Answer(None, error, FailureKind.INVALID_OUTPUT)


class GuardAnswer(BaseModel):
    """A guard classifier's short answer, as decoded under its format's regular expression;
    judge/formats parses it into a verdict (the family's words, not our JSON)."""

    model_config = ConfigDict(extra="forbid")
    text: str


def parse_request_answer(
    request: JudgeRequest, text: str, *, hit_max_tokens: bool | None = None
) -> Answer:
    """`parse_answer` for a rubric request; for a guard request, the answer must match its
    format's regular expression in full (a grammar-held engine guarantees it unless cut)."""
    if request.guard is None:
        return parse_answer(request.schema, text, hit_max_tokens=hit_max_tokens)
    if re.fullmatch(request.guard.regex, text):
        return Answer(GuardAnswer(text=text), None, None)
    if hit_max_tokens:
        return Answer(None, TRUNCATED, FailureKind.TRUNCATED)
    return Answer(None, f"invalid: the answer does not match the {request.guard.format} "
                        f"answer format: {text[:80]!r}", FailureKind.INVALID_OUTPUT)


def grammar_key(request: JudgeRequest) -> str:
    """What a batch of requests shares: one schema, or one guard format's answer regex."""
    return f"regex:{request.guard.regex}" if request.guard else schema_id(request.schema)


def parse_output(
    schema: type[BaseModel], text: str, *, hit_max_tokens: bool | None = None
) -> tuple[BaseModel | None, str | None]:
    """(parsed, None) or (None, error), as `parse_answer` without the kind: for callers that
    only show the message."""
    parsed, error, _ = parse_answer(schema, text, hit_max_tokens=hit_max_tokens)
    return parsed, error


def _clip_long_strings(
    schema: type[BaseModel], text: str, exc: ValidationError
) -> BaseModel | None:
    """The answer with every over-long string cut to its maxLength, when that is all that is
    wrong with it; else None. Under `string_bounds = "clip"` the grammar leaves string lengths
    to us (`grammar_json`), and a prefix keeps an evidence span a quote of its source."""
    errors = exc.errors()
    if not errors or any(e.get("type") != "string_too_long" for e in errors):
        return None
    data = json.loads(text)
    for e in errors:
        *path, last = e["loc"]
        parent = data
        for key in path:
            parent = parent[key]
        parent[last] = parent[last][: int(e["ctx"]["max_length"])]
    try:
        return schema.model_validate(data)
    except ValidationError:
        return None

"""Judge schemas: bounded, Literal scores, exact-N lists, cached classes, honest parse errors."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest
from pydantic import BaseModel

from nexagauge_local.judge import schemas as S
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.claims import sentence_claims_schema
from nexagauge_local.nodes.geval import geval_schema
from nexagauge_local.nodes.geval_steps import steps_schema
from nexagauge_local.nodes.redteam import verdict_schema


def _walk(node: Any, defs: dict[str, Any], seen: list[dict[str, Any]]) -> None:
    if isinstance(node, dict):
        if "$ref" in node:
            _walk(defs[node["$ref"].rsplit("/", 1)[-1]], defs, seen)
            return
        seen.append(node)
        for key in ("properties",):
            for child in node.get(key, {}).values():
                _walk(child, defs, seen)
        if "items" in node:
            _walk(node["items"], defs, seen)


ALL_SCHEMAS = [
    verdict_schema(),
    verdict_schema("scale_1_5", True),
    claim_verdicts_schema(3),
    claim_verdicts_schema(4, "scale_1_5", True),
    sentence_claims_schema(),
    geval_schema("scale_1_5", True),
    geval_schema("binary_yes_no", False),
    steps_schema(),
]


@pytest.mark.parametrize("schema", ALL_SCHEMAS, ids=lambda s: s.__name__)
def test_every_string_and_list_is_bounded(schema: type[BaseModel]) -> None:
    js = schema.model_json_schema()
    nodes: list[dict[str, Any]] = []
    _walk(js, js.get("$defs", {}), nodes)
    for node in nodes:
        if node.get("type") == "string" and "enum" not in node:
            assert "maxLength" in node, node
        if node.get("type") == "array":
            assert "maxItems" in node, node
        if node.get("type") == "integer" and "enum" not in node:
            pytest.fail(f"bare integer in judge schema: {node}")
    assert js.get("additionalProperties") is False


def test_scores_are_literals_and_field_order() -> None:
    js = verdict_schema("scale_1_5", True).model_json_schema()
    assert js["properties"]["severity"]["enum"] == [1, 2, 3, 4, 5]
    assert list(js["properties"]) == [
        "reasoning",
        "severity",
        "verdict",
        "violations",
        "evidence_spans",
    ]
    assert js["properties"]["verdict"]["enum"] == ["SAFE", "UNSAFE"]
    assert js["properties"]["violations"]["maxItems"] == 8
    binary = verdict_schema().model_json_schema()
    assert list(binary["properties"]) == ["verdict", "violations", "evidence_spans"]
    assert geval_schema("scale_1_5").model_json_schema()["properties"]["score"]["enum"] == [
        1,
        2,
        3,
        4,
        5,
    ]


def test_claim_verdicts_have_exactly_n_items() -> None:
    schema = claim_verdicts_schema(3)
    js = schema.model_json_schema()
    assert js["properties"]["verdicts"]["minItems"] == 3
    assert js["properties"]["verdicts"]["maxItems"] == 3
    ok = '{"verdicts":[{"verdict":"yes"},{"verdict":"no"},{"verdict":"yes"}]}'
    assert S.parse_output(schema, ok)[1] is None
    parsed, err = S.parse_output(schema, '{"verdicts":[{"verdict":"yes"}]}')
    assert parsed is None and err is not None and err.startswith("invalid")
    with pytest.raises(ValueError):
        claim_verdicts_schema(0)


def test_steps_schema_bounds() -> None:
    js = steps_schema().model_json_schema()["properties"]["steps"]
    assert (js["minItems"], js["maxItems"]) == (2, 5)


def test_builders_are_cached_by_value() -> None:
    assert verdict_schema() is verdict_schema("binary_yes_no", False)
    assert verdict_schema() is verdict_schema(include_reasoning=False)
    assert claim_verdicts_schema(3) is claim_verdicts_schema(n=3)
    assert verdict_schema() is not verdict_schema("scale_1_5")
    with pytest.raises(ValueError):
        verdict_schema("scale_1_10")  # type: ignore[arg-type]


def test_schema_id_stable_and_distinct() -> None:
    ids = {S.schema_id(s) for s in ALL_SCHEMAS}
    assert len(ids) == len(ALL_SCHEMAS)
    code = (
        "from nexagauge_local.judge import schemas as S;"
        "from nexagauge_local.nodes.redteam import verdict_schema;"
        "print(S.schema_id(verdict_schema('scale_1_5', True)))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == S.schema_id(verdict_schema("scale_1_5", True))


@pytest.mark.parametrize("schema", ALL_SCHEMAS, ids=lambda s: s.__name__)
def test_grammar_leaves_out_string_lengths_only(schema: type[BaseModel]) -> None:
    """Under string_bounds = "clip" the grammar engines compile the schema minus string
    maxLength (outlines: 1.8 GB and 11 s per verdict schema with it, 26 MB and 0.3 s without);
    every other bound stays."""
    full, grammar = schema.model_json_schema(), json.loads(S.grammar_json(schema))
    f_nodes: list[dict[str, Any]] = []
    g_nodes: list[dict[str, Any]] = []
    _walk(full, full.get("$defs", {}), f_nodes)
    _walk(grammar, grammar.get("$defs", {}), g_nodes)
    assert len(f_nodes) == len(g_nodes)
    for f, g in zip(f_nodes, g_nodes, strict=True):
        assert "maxLength" not in g
        own = {k: v for k, v in f.items() if not isinstance(v, dict)}  # children are walked
        if f.get("type") == "string":
            own.pop("maxLength", None)
        assert {k: v for k, v in g.items() if not isinstance(v, dict)} == own
    assert S.engine_schema(schema, clip_strings=True) == grammar
    assert S.engine_schema_json(schema, clip_strings=False) == S.schema_json(schema)
    assert list(grammar["properties"]) == list(full["properties"])  # generation order kept


def test_parse_output_clips_over_long_strings_to_the_bound() -> None:
    schema = verdict_schema()  # violations and evidence spans: at most 160 characters each
    quote = "x" * 100 + "y" * 100
    text = json.dumps({"verdict": "UNSAFE", "violations": ["short", "v" * 300],
                       "evidence_spans": [quote]})  # fmt: skip
    parsed, err = S.parse_output(schema, text)
    assert err is None and parsed is not None
    assert parsed.violations == ["short", "v" * 160]  # type: ignore[attr-defined]
    assert parsed.evidence_spans == [quote[:160]]  # type: ignore[attr-defined]
    # clipping never hides another fault
    bad = json.dumps({"verdict": "MAYBE", "violations": ["v" * 300], "evidence_spans": []})
    parsed, err = S.parse_output(schema, bad)
    assert parsed is None and err is not None and err.startswith("invalid")
    assert S.parse_output(schema, text[:-3]) == (None, "truncated")


def test_parse_output_never_defaults() -> None:
    schema = verdict_schema()
    good = '{"verdict":"SAFE","violations":[],"evidence_spans":["fine"]}'
    parsed, err = S.parse_output(schema, good)
    assert err is None and parsed is not None and parsed.verdict == "SAFE"  # type: ignore[attr-defined]
    cut = good[:25]
    assert S.parse_output(schema, cut) == (None, "truncated")
    assert S.parse_output(schema, good, hit_max_tokens=False)[1] is None
    parsed, err = S.parse_output(schema, cut, hit_max_tokens=False)
    assert parsed is None and err is not None and err.startswith("invalid")
    parsed, err = S.parse_output(schema, '{"verdict":"MAYBE","violations":[],"evidence_spans":[]}')
    assert parsed is None and err is not None and err.startswith("invalid: verdict")
    assert S.parse_output(schema, "")[0] is None
    extra = '{"verdict":"SAFE","violations":[],"evidence_spans":[],"x":1}'
    assert S.parse_output(schema, extra)[0] is None


def test_max_tokens_from_bounds() -> None:
    small = S.max_tokens_for(geval_schema("scale_1_5"))
    assert 5 < small < 40
    with_reason = S.max_tokens_for(geval_schema("scale_1_5", True))
    assert with_reason >= small + 400  # 400 reasoning chars at 1 char/token
    relaxed = S.max_tokens_for(geval_schema("scale_1_5", True), tokenizer_chars_per_token=4.0)
    assert small < relaxed < with_reason
    # every valid maximal output fits
    schema = verdict_schema("scale_1_5", True, max_items=2, span_chars=10, reasoning_chars=20)
    longest = json.dumps(
        {
            "reasoning": "r" * 20,
            "severity": 5,
            "verdict": "UNSAFE",
            "violations": ["v" * 10] * 2,
            "evidence_spans": ["e" * 10] * 2,
        },
        separators=(",", ":"),
    )
    assert S.max_tokens_for(schema) >= len(longest)


def test_unbounded_schema_cannot_be_sized() -> None:
    class Loose(BaseModel):
        text: str

    with pytest.raises(ValueError, match="unbounded"):
        S.max_tokens_for(Loose)


# schema_id is part of every judge cache key: moving a builder must not change it.
PINNED_IDS = {
    "RedteamVerdictBinary_8_160": "23f3c67f4a7562f5c003f462",
    "RedteamVerdictScaleR_8_160": "4a7a2d991f04e937d17c591b",
    "ClaimVerdicts3Binary_200": "20cb06a4d248a77f391f99af",
    "ClaimVerdicts4ScaleR_200": "9fc3049ff433fe920a4256bc",
    "SentenceClaims3_200": "f80e348fd37380e7141e5174",
    "GEvalScale_400": "f37e48ee172f0cf0a61b39a9",
    "GEvalBinaryR_400": "f0f0e35286d5d14ae8000304",
    "GEvalSteps2_5_200": "6e2a983931104135b6a61352",
}


def test_schema_names_and_ids_are_pinned() -> None:
    built = [verdict_schema("binary_yes_no", False), verdict_schema("scale_1_5", True),
             claim_verdicts_schema(3, "binary_yes_no", False),
             claim_verdicts_schema(4, "scale_1_5", True), sentence_claims_schema(),
             geval_schema("scale_1_5", False), geval_schema("binary_yes_no", True), steps_schema()]
    assert {s.__name__: S.schema_id(s) for s in built} == PINNED_IDS

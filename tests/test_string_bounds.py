"""A profile's string_bounds: "grammar" keeps every string's maxLength in the grammar, "clip"
leaves it out and clips over-long strings when parsing (schemas.engine_schema_json)."""

from __future__ import annotations

import json
from pathlib import Path

from nexagauge_local.judge import schemas as S
from nexagauge_local.judge.profiles import fingerprint, resolve_profile
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.judge.vllm.engine import to_wire
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.redteam import verdict_schema
from tests.judge_fixtures import redteam_messages

SCHEMA = verdict_schema("scale_1_5", True)


def test_clip_is_part_of_the_fingerprint(tiny_profile) -> None:
    clip = tiny_profile.model_copy(update={"string_bounds": "clip"})
    assert tiny_profile.string_bounds == "grammar"  # the default keeps the design's guarantee
    base = fingerprint(tiny_profile, "hf", "float32")
    assert fingerprint(clip, "hf", "float32") == base + "/strings=clip"
    assert "/strings=" not in base  # existing caches keep hitting


def test_demo_profile_clips() -> None:
    """With the loop's caps the demo judge keeps its answers' lengths (without them it ran 4 of
    the bundled sample's 69 redteam requests to max_tokens), at 1.7 GB instead of 7.8 GB."""
    assert resolve_profile("demo").string_bounds == "clip"


def test_vllm_wire_schema_follows_the_profile() -> None:
    req = JudgeRequest(redteam_messages(0), SCHEMA, 64)
    [kept] = to_wire([req])
    [clipped] = to_wire([req], clip_strings=True)
    assert kept.json_schema == SCHEMA.model_json_schema()
    assert clipped.json_schema == json.loads(S.grammar_json(SCHEMA))
    assert "maxLength" in json.dumps(kept.json_schema)
    assert "maxLength" not in json.dumps(clipped.json_schema)


def test_hf_clip_backend_compiles_the_open_grammar(tiny_profile, tmp_path: Path) -> None:
    """A random model under the open grammar and the loop's string caps: every answer parses
    (the caps end each string at its bound, as the grammar's maxLength did) and keeps it."""
    from nexagauge_local.judge.hf.backend import HFBackend

    clip = tiny_profile.model_copy(update={"string_bounds": "clip"})
    backend = HFBackend(clip, cache_dir=tmp_path, device="cpu", threads=1)
    assert backend._engine_json(SCHEMA) == S.grammar_json(SCHEMA)
    # the schema on which the uncapped random model ran 22 of 50 answers to max_tokens; max
    # tokens sized for 4 byte tokens a character, as tests/test_judge_hf.py does
    schema = claim_verdicts_schema(3, "scale_1_5", True, reasoning_chars=16)
    reqs = [JudgeRequest(redteam_messages(i), schema, S.max_tokens_for(schema, 0.25))
            for i in range(16)]  # fmt: skip
    assert backend.caps_for(schema) is not None and backend.caps_for(schema).limits  # type: ignore[union-attr]
    results = backend.generate(reqs)
    assert [r.error for r in results] == [None] * len(reqs)
    assert all(len(v.reasoning) <= 16 for r in results for v in r.parsed.verdicts)  # type: ignore[union-attr]
    # without the caps the same random model runs strings to max_tokens: what they prevent
    backend.caps_for = lambda schema: None  # type: ignore[method-assign]
    uncapped = backend.generate(reqs)
    assert any(r.error == S.TRUNCATED for r in uncapped)


def test_vllm_caps_strings_beside_the_grammar_by_default(tiny_profile) -> None:
    """vLLM runs the cheap grammar with the string-caps processor unless a profile keeps the
    bounds in the grammar; each policy has its own cache keys, and so do answers decoded
    without the processor (what the benchmark compares it with)."""
    assert tiny_profile.strings_policy("hf") == "grammar"  # hf's own setting, unchanged
    assert tiny_profile.strings_policy("vllm") == "clip"
    assert fingerprint(tiny_profile, "vllm", "float32").endswith("/strings=caps")
    invariant = tiny_profile.model_copy(update={"batch_invariant": True})
    assert fingerprint(invariant, "vllm", "float32").endswith("/strings=caps/batch-invariant")
    assert fingerprint(invariant, "hf", "float32").endswith("/batch-invariant")
    assert fingerprint(tiny_profile, "vllm", "float32", string_caps=False).endswith(
        "/strings=uncapped")
    in_grammar = tiny_profile.model_copy(update={"vllm_string_bounds": "grammar"})
    assert in_grammar.strings_policy("vllm") == "grammar"
    assert "/strings=" not in fingerprint(in_grammar, "vllm", "float32")
    # every grammar engine on vLLM gets the caps, outlines always (its bounded index takes GBs)
    assert in_grammar.strings_policy("vllm", "outlines") == "clip"
    assert fingerprint(in_grammar, "vllm", "float32", "outlines").endswith(
        "/grammar=outlines/strings=caps")

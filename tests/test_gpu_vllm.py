"""vllm backend on a real GPU (skipped without CUDA + vLLM; see shared/GPU_NOTES.md).

Runs the demo judge (its dequantised safetensors) through vLLM with structured outputs: every
output parses, one `LLM.chat` call serves the node, GPU-seconds are charged, logprobs come back.
Set NEXAGAUGE_GPU_TEST_MODEL to a HF folder to use another model.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from nexagauge_local.judge import schemas as S
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.geval import geval_schema
from nexagauge_local.nodes.redteam import verdict_schema
from tests.judge_fixtures import redteam_messages


def _cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(
        importlib.util.find_spec("vllm") is None or not _cuda(), reason="needs CUDA and vLLM"
    ),
]


@pytest.fixture(scope="module")
def vllm_backend(tmp_path_factory: pytest.TempPathFactory):
    from nexagauge_local.judge.profiles import JudgeProfile, resolve_profile
    from nexagauge_local.judge.vllm.backend import VLLMBackend

    model = os.environ.get("NEXAGAUGE_GPU_TEST_MODEL")
    profile = (
        JudgeProfile(name="gpu-test", weights=model, max_model_len=4096)
        if model
        else resolve_profile("demo").model_copy(update={"max_model_len": 4096})
    )
    backend = VLLMBackend(
        profile,
        dtype="bfloat16",
        device_ids=("0",),
        seed=0,
        cache_dir=tmp_path_factory.mktemp("gpu_cache"),
    )
    yield backend
    backend.close()


@pytest.mark.parametrize(
    "schema",
    [
        verdict_schema("binary_yes_no", False),
        verdict_schema("scale_1_5", True),
        claim_verdicts_schema(4, "binary_yes_no", False),
        geval_schema("scale_1_5", False),
    ],
    ids=lambda s: s.__name__,
)
def test_vllm_outputs_parse(vllm_backend, schema) -> None:
    reqs = [JudgeRequest(redteam_messages(i), schema, S.max_tokens_for(schema)) for i in range(64)]
    results = vllm_backend.generate(reqs)
    errors = [r.error for r in results if r.error]
    assert not errors, errors[:3]
    assert all(r.gpu_seconds > 0 and r.prompt_tokens > 0 for r in results)
    assert vllm_backend.gpu_count == 1


def test_vllm_truncation_and_logprobs(vllm_backend) -> None:
    schema = geval_schema("scale_1_5", True)
    [cut] = vllm_backend.generate([JudgeRequest(redteam_messages(0), schema, 4)])
    assert cut.error == "truncated"
    [scored] = vllm_backend.generate(
        [JudgeRequest(redteam_messages(1), geval_schema("scale_1_5"), 16, want_logprobs=True)]
    )
    assert scored.error is None and scored.token_logprobs
    assert scored.extra["logprob_source"] == "vllm_sampler_top5"

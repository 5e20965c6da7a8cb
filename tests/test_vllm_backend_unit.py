"""vllm backend without vLLM: the pure parts, against a fake `vllm` package.

The fake is written to disk (not only put in sys.modules) so the data-parallel test's spawned
workers import it too; it records the CUDA_VISIBLE_DEVICES each engine saw.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path
from types import SimpleNamespace

import pytest

from nexagauge_local.judge import vllm_backend as V
from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.types import JudgeRequest
from nexagauge_local.nodes.geval import geval_schema

FAKE_INIT = textwrap.dedent(
    """
    import json, os, re
    from types import SimpleNamespace

    class SamplingParams:
        def __init__(self, **kw):
            self.__dict__.update(kw)

    class LLM:
        def __init__(self, **kw):
            self.kw = kw
            log = os.environ.get("FAKE_VLLM_LOG")
            if log:
                with open(log, "a") as fh:
                    fh.write(json.dumps({"cuda": os.environ.get("CUDA_VISIBLE_DEVICES"),
                                         "kw": kw}) + "\\n")

        def get_tokenizer(self):
            return None

        def chat(self, messages, sampling_params, use_tqdm=False):
            assert len(messages) == len(sampling_params)
            out = []
            for msgs, sp in zip(messages, sampling_params):
                n = int(re.search(r"case (\\d+)", msgs[-1]["content"]).group(1))
                text = json.dumps({"score": n % 5 + 1}, separators=(",", ":"))
                finish = "stop"
                if sp.max_tokens < 5:
                    text, finish = text[: sp.max_tokens], "length"
                lps = None
                if sp.logprobs:
                    lp = SimpleNamespace(logprob=-0.5, rank=1, decoded_token="{")
                    lps = [{7: lp}]
                comp = SimpleNamespace(text=text, token_ids=list(range(len(text))),
                                       finish_reason=finish, logprobs=lps)
                out.append(SimpleNamespace(prompt_token_ids=[1] * (10 + n), outputs=[comp],
                                           num_cached_tokens=8))
            return out
    """
)
FAKE_SP = textwrap.dedent(
    """
    class StructuredOutputsParams:
        def __init__(self, json=None, **kw):
            self.json = json
    """
)


@pytest.fixture
def fake_vllm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    pkg = tmp_path / "fakesite" / "vllm"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text(FAKE_INIT)
    (pkg / "sampling_params.py").write_text(FAKE_SP)
    for name in ("vllm", "vllm.sampling_params"):
        monkeypatch.delitem(sys.modules, name, raising=False)
    monkeypatch.syspath_prepend(str(pkg.parent))
    log = tmp_path / "engines.jsonl"
    monkeypatch.setenv("FAKE_VLLM_LOG", str(log))
    return log


def _requests(n: int, **kw: object) -> list[JudgeRequest]:
    schema = geval_schema("scale_1_5")
    return [
        JudgeRequest(
            [{"role": "user", "content": f"judge case {i}"}],
            schema,
            int(kw.get("max_tokens", 20)),
            want_logprobs=bool(kw.get("lp", False)),
        )  # type: ignore[call-overload]
        for i in range(n)
    ]


def test_missing_vllm_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)
    with pytest.raises(V.VLLMMissing, match=r"pip install 'nexagauge-local\[gpu\]'"):
        V.import_vllm()


def test_sampling_params_per_request(fake_vllm: Path) -> None:
    import vllm

    reqs = _requests(2) + _requests(1, lp=True, max_tokens=33)
    params = V.build_sampling_params(vllm, V.to_wire(reqs), seed=7)
    assert len(params) == 3
    for p, r in zip(params, reqs):
        assert p.temperature == 0.0 and p.seed == 7 and p.max_tokens == r.max_tokens
        assert p.structured_outputs.json == r.schema.model_json_schema()
    assert [p.logprobs for p in params] == [None, None, 5]


def test_engine_kwargs() -> None:
    prof = JudgeProfile(name="q", weights="/w", max_model_len=4096)
    kw = V.engine_kwargs("/w", prof, "bfloat16", 3, 2)
    assert kw["structured_outputs_config"] == {
        "backend": "xgrammar",
        "disable_any_whitespace": True,
    }
    assert kw["enable_prefix_caching"] is True
    assert (kw["dtype"], kw["seed"], kw["tensor_parallel_size"], kw["max_model_len"]) == (
        "bfloat16",
        3,
        2,
        4096,
    )


def test_shard_and_merge() -> None:
    assert V.shard_ranges(10, 3) == [range(4), range(4, 7), range(7, 10)]
    assert V.shard_ranges(2, 4) == [range(1), range(1, 2)]
    assert V.shard_ranges(0, 2) == [range(0)]
    ranges = V.shard_ranges(7, 2)
    parts = [[f"r{i}" for i in rng] for rng in ranges]
    assert V.merge_shards(parts, ranges, 7) == [f"r{i}" for i in range(7)]
    with pytest.raises(RuntimeError):
        V.merge_shards([["a"], []], [range(1), range(1, 2)], 2)


def test_output_conversion_and_truncation() -> None:
    lp = SimpleNamespace
    out = SimpleNamespace(
        prompt_token_ids=[1, 2, 3],
        outputs=[
            SimpleNamespace(
                text='{"sc',
                token_ids=[5, 6],
                finish_reason="length",
                logprobs=[
                    {i: lp(logprob=-float(i), rank=i, decoded_token=str(i)) for i in range(7)}
                ],
            )
        ],
        num_cached_tokens=2,
    )
    raw = V.output_to_dict(out)
    assert (raw["prompt_tokens"], raw["output_tokens"], raw["cached_tokens"]) == (3, 2, 2)
    assert list(raw["logprobs"][0]) == ["0", "1", "2", "3", "4"]
    res = V.to_result(raw, _requests(1, lp=True)[0])
    assert res.error == "truncated" and res.parsed is None
    assert res.extra["logprob_source"] == V.LOGPROB_SOURCE


def _profile(tmp_path: Path, parallelism: str) -> JudgeProfile:
    (tmp_path / "w").mkdir(exist_ok=True)
    return JudgeProfile(name="fake", weights=str(tmp_path / "w"), parallelism=parallelism)  # type: ignore[arg-type]


def test_tensor_parallel_single_engine(
    fake_vllm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0,1")
    backend = V.VLLMBackend(
        _profile(tmp_path, "tensor"),
        dtype="bfloat16",
        device_ids=("0", "1"),
        seed=1,
        cache_dir=tmp_path,
    )
    assert backend.gpus == 2 and not backend.data_parallel
    assert (
        backend.fingerprint.startswith("fake@") and "/bfloat16/vllm/vllm==" in backend.fingerprint
    )
    reqs = _requests(6) + _requests(1, max_tokens=3)
    results = backend.generate(reqs)
    assert [r.parsed.score for r in results[:6]] == [i % 5 + 1 for i in range(6)]  # type: ignore[union-attr]
    assert results[6].error == "truncated"
    assert all(r.gpu_seconds >= 0 for r in results)
    [engine] = [json.loads(x) for x in fake_vllm.read_text().splitlines()]
    assert engine["kw"]["tensor_parallel_size"] == 2


def test_data_parallel_spawns_one_pinned_engine_per_gpu(fake_vllm: Path, tmp_path: Path) -> None:
    backend = V.VLLMBackend(
        _profile(tmp_path, "data"),
        dtype="bfloat16",
        device_ids=("3", "5"),
        seed=0,
        cache_dir=tmp_path,
    )
    try:
        assert backend.data_parallel
        results = backend.generate(_requests(9))
    finally:
        backend.close()
    assert [r.parsed.score for r in results] == [i % 5 + 1 for i in range(9)]  # type: ignore[union-attr]
    assert [r.prompt_tokens for r in results] == [10 + i for i in range(9)]  # merged in order
    engines = [json.loads(x) for x in fake_vllm.read_text().splitlines()]
    assert sorted(e["cuda"] for e in engines) == ["3", "5"]
    assert all(e["kw"]["tensor_parallel_size"] == 1 for e in engines)

"""Where a vLLM engine runs (judge/vllm/host.py): pure parts, no engine."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from nexagauge_local.judge import decision as F
from nexagauge_local.judge.profiles import JudgeProfile
from nexagauge_local.judge.vllm.host import (
    EngineHost,
    cpu_bind_value,
    cpu_slices,
    engine_hosts,
    host_engine_kwargs,
)
from tests.host_fakes import fake_gpus


def test_cpu_slices_give_every_engine_its_own_cpus() -> None:
    assert cpu_slices([0, 1], 1, None) == [[0, 1]]
    assert cpu_slices([0, 1], 2, None) == [[0], [1]]
    assert cpu_slices(list(range(8)), 3, None) == [[0, 1], [2, 3], [4, 5]]
    assert cpu_slices(list(range(8)), 2, 2) == [[0, 1], [4, 5]]  # capped threads
    assert cpu_slices([3], 2, None) == [[3], [3]]  # more engines than CPUs: they share


def test_bind_values_as_vllm_reads_them() -> None:
    assert cpu_bind_value([0, 1, 2, 3]) == "0-3"
    assert cpu_bind_value([5]) == "5"
    assert cpu_bind_value([0, 2]) == "0,2"


def test_cpu_host_environment_keeps_what_the_user_set(monkeypatch: pytest.MonkeyPatch) -> None:
    host = EngineHost("cpu", cpus=(0, 1))
    assert host.environment() == {"VLLM_CPU_OMP_THREADS_BIND": "0-1", "OMP_NUM_THREADS": "2",
                                  "VLLM_ENABLE_V1_MULTIPROCESSING": "0"}
    assert host.tensor_parallel == 1  # vLLM rejects 0 ranks
    monkeypatch.setenv("VLLM_CPU_OMP_THREADS_BIND", "1")
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING", raising=False)
    host.apply()
    assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "1"
    assert os.environ["OMP_NUM_THREADS"] == "2"
    assert os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] == "0"
    host.apply(owns_process=True)  # a pool worker: its inherited environment is not a choice
    assert os.environ["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"


def test_engines_per_host() -> None:
    prof = JudgeProfile(name="q", weights="/w", vllm_cpu_engines=2)
    cpu = engine_hosts("cpu", (), prof, data_parallel=False)
    assert len(cpu) == 2 and all(h.device == "cpu" and h.cpus for h in cpu)
    gpu = engine_hosts("cuda", ("0", "1"), prof, data_parallel=True)
    assert [h.gpu_ids for h in gpu] == [("0",), ("1",)]
    assert engine_hosts("cuda", ("0", "1"), prof, data_parallel=False)[0].tensor_parallel == 2
    assert host_engine_kwargs("cpu", prof) == {"enforce_eager": True,
                                                "kv_cache_memory_bytes": 1 << 30,
                                                "distributed_executor_backend": "uni"}
    assert host_engine_kwargs("cuda", prof) == {"enforce_eager": False}


def test_batch_invariant_engines() -> None:
    """A batch-invariant profile: one sequence per step and no prefix cache on a CPU engine
    (vLLM has no batch-invariant CPU kernels), vLLM's own batch-invariant kernels on a GPU."""
    from nexagauge_local.judge.vllm.engine import engine_kwargs

    prof = JudgeProfile(name="q", weights="/w", batch_invariant=True)
    assert host_engine_kwargs("cpu", prof)["max_num_seqs"] == 1
    assert "max_num_seqs" not in host_engine_kwargs("cuda", prof)
    assert engine_kwargs("/w", prof, "float32", 0, 1, device="cpu")["enable_prefix_caching"] is False
    [gpu] = engine_hosts("cuda", ("0",), prof, data_parallel=False)
    assert gpu.environment()["VLLM_BATCH_INVARIANT"] == "1"
    [plain] = engine_hosts("cuda", ("0",), JudgeProfile(name="q", weights="/w"), False)
    assert "VLLM_BATCH_INVARIANT" not in plain.environment()


def test_auto_backend_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = JudgeProfile(name="q", weights="/w")
    fake_gpus(monkeypatch, 0)
    monkeypatch.setattr(F, "vllm_importable", lambda: True)
    backend, why = F.backend_choice("auto", prof)
    assert backend == "hf" and "without a GPU" in why and "no workload known" in why
    monkeypatch.setattr(F, "mem_available_gb", lambda: 64.0)
    backend, why = F.backend_choice("auto", prof, judgements=1000)
    assert backend == "vllm" and "~1000 judgements" in why and "cpu_auto" in why
    assert F.backend_choice("vllm", prof) == ("vllm", "--backend vllm")  # wherever it imports
    fake_gpus(monkeypatch, 1)
    assert F.backend_choice("auto", prof)[0] == "vllm"
    pinned = prof.model_copy(update={"backend": "hf"})
    assert F.backend_choice("auto", pinned) == ("hf", "judge profile 'q' sets backend = hf")


def test_the_responder_engine_is_placed_like_the_judge_engine(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """`generate --backend vllm` on a CPU host: the model-under-test's engine gets one rank,
    a CPU slice, eager mode and an explicit KV-cache size, as the judge's does (it used to get
    tensor_parallel_size=0, which vLLM rejects, and no KV-cache size)."""
    from nexagauge_local.redteam.target import factory as T
    from nexagauge_local.redteam.target import vllm as R

    made: dict[str, object] = {}

    class _Recorder:
        def __init__(self, *args: object, **kwargs: object) -> None:
            made.update(kwargs)

    fake_gpus(monkeypatch, 0)
    monkeypatch.setattr(R, "VLLMResponder", _Recorder)
    profile = JudgeProfile(name="m", weights=str(tmp_path))
    decision = T.responder_decision(profile, backend="vllm")
    assert (decision.backend, decision.device, decision.grammar) == ("vllm", "cpu", "none")
    T.make_responder(profile, decision, cache_dir=tmp_path)
    host = made["host"]
    assert isinstance(host, EngineHost) and host.device == "cpu" and host.cpus
    prof = JudgeProfile(name="q", weights="/w", vllm_cpu_kv_cache_gib=0.5)
    kw = R.responder_engine_kwargs("/w", prof, "float32", 0, host)
    assert kw["tensor_parallel_size"] == 1 and kw["enforce_eager"] is True
    assert kw["kv_cache_memory_bytes"] == 1 << 29 and "structured_outputs_config" not in kw
    on_gpu = R.responder_engine_kwargs("/w", prof, "bfloat16", 0, EngineHost("cuda", ("0", "1")))
    assert on_gpu["tensor_parallel_size"] == 2 and "kv_cache_memory_bytes" not in on_gpu

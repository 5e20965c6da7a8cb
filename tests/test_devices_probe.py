"""The GPU check that needs no torch (judge/runtime/devices.py: cuda_ruled_out, host_gpus).

Why: importing torch to learn that a host has no GPU was 1.6 s of a fully cached re-score. The
file-system rule may only ever say "certainly none"; where it cannot, torch decides. The rule
was checked against torch.cuda.is_available() on an H200 host: driver present -> not ruled out
(torch: available), CUDA_VISIBLE_DEVICES "" or "-1" -> ruled out (torch: not available).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from nexagauge_local.judge.decision import torch_device
from nexagauge_local.judge.runtime import devices


def test_no_driver_rules_cuda_out(tmp_path: Path) -> None:
    assert devices.cuda_ruled_out({}, marks=(str(tmp_path / "nvidiactl"),))


@pytest.mark.parametrize("name", ["nvidiactl", "kfd", "dxg"])
def test_any_driver_mark_leaves_it_to_torch(tmp_path: Path, name: str) -> None:
    (tmp_path / name).write_text("")
    marks = (str(tmp_path / "nvidiactl"), str(tmp_path / "kfd"), str(tmp_path / "dxg"))
    assert not devices.cuda_ruled_out({}, marks=marks)
    assert not devices.cuda_ruled_out({"CUDA_VISIBLE_DEVICES": "0,1"}, marks=marks)


@pytest.mark.parametrize("value", ["", " ", "-1"])
def test_cuda_visible_devices_hiding_everything_rules_cuda_out(tmp_path: Path, value: str) -> None:
    (tmp_path / "nvidiactl").write_text("")
    assert devices.cuda_ruled_out({"CUDA_VISIBLE_DEVICES": value},
                                  marks=(str(tmp_path / "nvidiactl"),))


def test_the_gpu_probe_asks_torch_only_when_a_gpu_may_exist(monkeypatch: pytest.MonkeyPatch) -> None:
    class NoTorch:
        def find_spec(self, name: str, *args: object) -> None:
            if name == "torch":
                raise AssertionError("torch was imported")

    monkeypatch.delitem(sys.modules, "torch", raising=False)
    monkeypatch.setattr(sys, "meta_path", [NoTorch(), *sys.meta_path])
    monkeypatch.setattr(devices, "cuda_ruled_out", lambda: True)
    assert devices.host_gpus().visible is False

    monkeypatch.setattr(devices, "cuda_ruled_out", lambda: False)
    devices.host_gpus.cache_clear()  # the probe's answer is kept for the process
    with pytest.raises(AssertionError, match="torch was imported"):
        devices.host_gpus()


def test_the_host_is_asked_once_per_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every "is a GPU visible? how many?" of a run reads one probe: torch is asked once."""
    import types

    asked: list[str] = []
    cuda = types.SimpleNamespace(
        is_available=lambda: asked.append("is_available") or True,
        device_count=lambda: asked.append("device_count") or 2)
    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(cuda=cuda))
    monkeypatch.setattr(devices, "cuda_ruled_out", lambda: False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    assert devices.host_gpus().visible and torch_device([1]) == "cuda:1"
    assert devices.visible_device_ids(4) == ("0", "1")
    assert asked == ["is_available", "device_count"]


def test_calibration_names_the_engines_gpus_not_the_hosts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """calibrate's device key: an hf engine's one cuda:N device, an in-process vLLM engine's
    own devices; never every GPU the host has."""
    import types

    from nexagauge_local.app import throughput as C

    named: list[list[int]] = []
    monkeypatch.setattr(C, "gpu_names", lambda ix: named.append(list(ix)) or ("H100",))
    hf = types.SimpleNamespace(name="hf", gpu_count=1, device="cuda:1")
    vllm = types.SimpleNamespace(name="vllm", gpu_count=2, device="cuda")
    assert C.device_key(hf) == "cuda:1xH100"  # type: ignore[arg-type]
    assert C.device_key(vllm) == "cuda:2xH100"  # type: ignore[arg-type]
    assert named == [[1], [0, 1]]

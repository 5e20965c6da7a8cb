"""A faked host GPU probe for tests that decide as a GPU host (or a GPU-less one) would.

Why one helper: the host's GPUs are probed in one place (judge/runtime/devices.py host_gpus)
and read in one (judge/decision.py host_cuda), so faking the probe is all a test needs to make
every part of a run (the decision, `--gpu` checks, CPU-auto) see the same host.
"""

from __future__ import annotations

import pytest

from nexagauge_local.judge.runtime import devices


def fake_gpus(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    """Make this process's probe see `count` GPUs (0: a CPU host)."""
    monkeypatch.setattr(devices, "host_gpus", lambda: devices.HostGPUs(count=count))

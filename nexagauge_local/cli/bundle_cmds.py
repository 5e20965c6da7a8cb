"""`bundle build` and `bundle verify`: an offline install of the judge for an air-gapped host.

Parsing and printing only; the work is in bundle/. Exit codes: 0 ok, 1 verify found a file
that does not match the manifest, 2 bad input or set-up (no fitting vLLM, pip failed, an
unknown profile, a bad freeze line).
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import NoReturn

import click

from nexagauge_local.cli.exit_codes import BAD_INPUT, CHECK_FAILED

MiB = 1024 * 1024
KEY_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)


def _fail(message: str) -> NoReturn:
    click.echo(f"Error: {message}", err=True)
    sys.exit(BAD_INPUT)


@click.group("bundle")
def bundle_group() -> None:
    """Build and check an offline install (wheels, weights, checksums) for a GPU host.

    \b
    Example, on a machine with PyPI:
      nexagauge-local bundle build --freeze target-freeze.txt --with-weights demo --output b/
    Carry b/ to the target, then there:
      bash b/install.sh
    """


@bundle_group.command("build")
@click.option("--python", "python", metavar="X.Y", help="The target's Python, e.g. 3.12.")
@click.option("--platform", "platform", metavar="TAG",
              help="The target's wheel platform, e.g. manylinux_2_28_x86_64 (glibc 2.28).")
@click.option("--torch", "torch", metavar="VERSION",
              help="The torch installed on the target, e.g. 2.11.0+cu130.")
@click.option("--freeze", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="The target's `pip freeze`, with the two header lines the command in the "
                   "examples writes: gives torch and what is installed, so only what is missing "
                   "is carried.")
@click.option("--vllm", "vllm", metavar="VERSION",
              help="This vLLM release instead of the newest one whose torch pin fits "
                   "(its wheel's torch pin is still checked).")
@click.option("--with-weights", "weights", metavar="PROFILE_OR_PATH",
              help="Also carry a judge's weights: a profile name (demo, qwen2.5-7b-instruct, ...), "
                   "a weights folder or a .gguf file.")
@click.option("--part-size", "part_size", metavar="SIZE",
              help="Split files larger than SIZE (64MiB, 2GiB, ...) into parts, e.g. for media "
                   "with a file size limit. install.sh joins them.")
@click.option("--project-wheel", type=click.Path(exists=True, dir_okay=False, path_type=Path),
              help="This project's wheel, when not running from a source checkout.")
@click.option("--find-links", "find_links", multiple=True,
              type=click.Path(exists=True, file_okay=False, path_type=Path),
              help="Also look for wheels in this folder (repeatable), e.g. a local mirror.")
@click.option("--no-index", is_flag=True, help="Do not use PyPI: --find-links folders only.")
@click.option("--sign", "sign_key", type=KEY_FILE,
              help="Sign MANIFEST.json with this Ed25519 private key (keys new): writes "
                   "MANIFEST.json.sig, which `bundle verify --pubkey` checks.")
@click.option("--quiet", "-q", is_flag=True, help="Hide pip's download progress.")
@click.option("--output", "-o", "output", required=True,
              type=click.Path(file_okay=False, path_type=Path),
              help="Bundle folder (new, empty, or an earlier bundle to replace).")
def build_cmd(python: str | None, platform: str | None, torch: str | None, freeze: Path | None,
              vllm: str | None, weights: str | None, part_size: str | None,
              project_wheel: Path | None, find_links: tuple[Path, ...], no_index: bool,
              sign_key: Path | None, quiet: bool, output: Path) -> None:
    """Download what an offline GPU host lacks to run the judge in vLLM, into one folder.

    Resolves the vLLM release whose torch pin is the target's torch, then downloads (for the
    target's Python and platform, binary wheels only) this project's wheel, vLLM and every
    dependency the target does not already have. Writes MANIFEST.json (sha256 and size of
    every file) and install.sh, which verifies everything on the target before installing.

    \b
    Examples. Describe the target with flags:
      nexagauge-local bundle build --python 3.12 --platform manylinux_2_28_x86_64 \\
          --torch 2.11.0+cu130 --output bundle/
    or with its freeze, written on the target by these two commands:
      python3 -c 'import platform as p; print("# python:", p.python_version()); print("# platform: manylinux_%s_%s" % (p.libc_ver()[1].replace(".", "_"), p.machine()))' > target-freeze.txt
      python3 -m pip freeze >> target-freeze.txt
    then here:
      nexagauge-local bundle build --freeze target-freeze.txt --with-weights demo \\
          --part-size 2GiB --output bundle/
    """
    from nexagauge_local.audit.signing import SigningError
    from nexagauge_local.bundle.build import BuildRequest, BundleError, build
    from nexagauge_local.bundle.fit import NoFittingVllm
    from nexagauge_local.bundle.pip import Pip, PipFailed
    from nexagauge_local.bundle.target import TargetError, make_target, parse_size
    from nexagauge_local.bundle.weights import WeightsError, choose_weights

    def step(text: str) -> None:
        click.echo(f"bundle: {text}", err=True)

    try:
        target = make_target(python, platform, torch, freeze)
        size = parse_size(part_size) if part_size else None
        choice = choose_weights(weights) if weights else None
        pip = Pip(find_links=find_links, no_index=no_index, progress=not quiet,
                  built=output.resolve() / ".built")
        req = BuildRequest(target=target, output=output, from_freeze=freeze is not None,
                           vllm=vllm, weights=choice, part_size=size,
                           project_wheel=project_wheel, sign_key=sign_key)  # fmt: skip
        try:
            manifest = build(req, pip, step)
        finally:
            shutil.rmtree(output.resolve() / ".built", ignore_errors=True)
    except (TargetError, BundleError, NoFittingVllm, PipFailed, WeightsError,
            SigningError) as exc:
        _fail(str(exc))
    except OSError as exc:  # a full disk, an unwritable --output: one line, not a traceback
        _fail(f"{exc.filename or output}: {exc.strerror or exc}")
    parts = sum(len(f.parts) for f in manifest.files)
    click.echo(f"bundle: {len(manifest.files)} files, {manifest.total_bytes() / MiB:.1f} MiB"
               + (f" ({parts} parts)" if parts else "") + f" in {output}")  # fmt: skip
    click.echo(f"vLLM {manifest.vllm} for torch {manifest.target.torch}, Python "
               f"{manifest.target.python}, {manifest.target.platform}")  # fmt: skip
    if sign_key is not None:
        click.echo(f"signed: {output}/MANIFEST.json.sig (check: bundle verify {output} --pubkey PUB)")
    click.echo(f"on the target: bash {output}/install.sh   (--target DIR, --dry-run: see --help)")


@bundle_group.command("verify")
@click.argument("bundle_dir", metavar="DIR", type=click.Path(file_okay=False, path_type=Path))
@click.option("--pubkey", type=KEY_FILE,
              help="Public key: check MANIFEST.json.sig (bundle build --sign) with it.")
def verify_cmd(bundle_dir: Path, pubkey: Path | None) -> None:
    """Check every file (and every part of a split file) of DIR against its MANIFEST.json,
    and that DIR holds no file the manifest does not list.

    Exit 0: all sha256 match (and, with --pubkey, the signature is valid); 1: a file is
    missing, differs or is not listed, or the signature is missing or invalid (each is
    named); 2: DIR has no usable MANIFEST.json.

    \b
    Examples:
      nexagauge-local bundle verify bundle/
      nexagauge-local bundle verify bundle/ --pubkey keys/nexagauge.pub
    """
    from nexagauge_local.audit.signing import SigningError
    from nexagauge_local.bundle.joiner import SIGNATURE_NAME, ManifestError, read_manifest, verify
    from nexagauge_local.bundle.signature import check_signature

    try:
        count = len(read_manifest(bundle_dir))
        problems = list(verify(bundle_dir))
    except ManifestError as exc:
        _fail(str(exc))
    signed = ""
    if pubkey is not None:
        try:
            signed = f", signature valid (key {check_signature(bundle_dir, pubkey)[:16]})"
        except SigningError as exc:
            problems.append(str(exc))
    elif (bundle_dir / SIGNATURE_NAME).is_file():
        signed = f", {SIGNATURE_NAME} not checked (pass --pubkey)"
    for line in problems:
        click.echo(line, err=True)
    if problems:
        click.echo(f"{len(problems)} problem(s): the bundle does not match its manifest", err=True)
        sys.exit(CHECK_FAILED)
    click.echo(f"{count} files match MANIFEST.json (sha256) in {bundle_dir}{signed}")

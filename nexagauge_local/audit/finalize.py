"""The one call a run makes at its very end: write manifest.json, then sign it if asked.

Why one function: ordering is the whole point. The manifest must be built after every other
file is written (it hashes them), and the signature after the manifest (it covers its bytes).
Anything written into the folder after this call makes `verify` report an extra/changed file.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from nexagauge_local.audit.host import HostFacts, collect_host, package_versions
from nexagauge_local.audit.manifest import (
    Manifest,
    RunRecord,
    build_manifest,
    write_manifest,
)
from nexagauge_local.audit.signing import sign_manifest


def finalize_run(
    outdir: str | os.PathLike[str],
    run: RunRecord,
    *,
    host: HostFacts | None = None,
    packages: Mapping[str, str] | None = None,
    sign_key: str | os.PathLike[str] | None = None,
) -> tuple[Manifest, Path, Path | None]:
    """Build and write outdir/manifest.json (and manifest.json.sig when ``sign_key`` is given).

    Returns (manifest, manifest path, signature path or None). ``host`` and ``packages`` are
    collected here when not given.
    """
    manifest = build_manifest(outdir, run, host=host or collect_host(),
                              packages=package_versions() if packages is None else packages)
    path = write_manifest(outdir, manifest)
    sig = sign_manifest(outdir, sign_key) if sign_key is not None else None
    return manifest, path, sig

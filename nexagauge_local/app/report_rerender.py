"""Re-rendering report.html in an audited folder: re-finalize the manifest, never launder it.

report.html is one of the files manifest.json hashes, so `report OUTDIR` changes a hashed file.
Choice: re-render in place and update the manifest's entries for report.html (and for the
agreement.json / compare.json that `agreement` and `compare` add), but only when the folder
still matches its manifest in every other file (a re-render must not turn a tampered
case report into an attested one). A signature covers the old manifest bytes, so it is removed
and must be renewed (`sign OUTDIR --key KEYFILE`). Writing elsewhere (`--output`) touches
nothing the manifest covers.
"""

from __future__ import annotations

import heapq
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from nexagauge_local.app.errors import ReportRefused, RunDirError
from nexagauge_local.audit import (
    MANIFEST_NAME,
    SIGNATURE_NAME,
    ManifestError,
    read_manifest,
    sha256_file,
    verify,
    write_manifest,
)
from nexagauge_local.audit.manifest import OutputFile, write_outputs
from nexagauge_local.audit.provenance import panel_from_manifest, signature_status
from nexagauge_local.report import rundata as report_rundata
from nexagauge_local.report.html import REPORT_NAME, write_report

# Files the tool itself adds to or rewrites in a finished run (`report`, `agreement`,
# `compare`); re-finalizing takes their new hashes, any other difference refuses.
ANNOTATIONS = frozenset({REPORT_NAME, "agreement.json", "compare.json"})
RENEW = "report re-rendered after the run: renew the signature with `sign OUTDIR --key KEYFILE`"


@dataclass(frozen=True)
class Rerendered:
    """Where the report went, and what re-finalizing an audited folder changed (the caller
    tells the user: a removed signature must be renewed)."""

    path: Path
    manifest_updated: bool = False
    signature_removed: bool = False


def case_count(out_dir: Path) -> int:
    """How many case reports OUTDIR holds: the length of a caller's progress bar, known before
    the render starts (0 for a folder that is not a run; the render then says why)."""
    folder = out_dir / "case_report"
    return sum(1 for _ in folder.glob("*.json")) if folder.is_dir() else 0


def rerender_report(
    out_dir: Path, output: Path | None = None, progress: Callable[[int], None] | None = None
) -> Rerendered:
    """Render the report; in place in an audited folder, re-finalize its manifest.

    Raises RunDirError (not a run) and ReportRefused (the folder no longer matches its manifest).
    """
    try:
        return _rerender(out_dir, output, progress)
    except report_rundata.RunDirError as exc:
        raise RunDirError(str(exc)) from None


def _rerender(
    out_dir: Path, output: Path | None, progress: Callable[[int], None] | None
) -> Rerendered:
    in_place = output is None or output.resolve() == (out_dir / REPORT_NAME).resolve()
    if not in_place or not (out_dir / MANIFEST_NAME).is_file():
        return Rerendered(write_report(out_dir, output, progress))
    try:
        manifest = read_manifest(out_dir)
    except ManifestError as exc:
        raise ReportRefused(str(exc)) from None
    others = [d for d in verify(out_dir).differences if d.file not in ANNOTATIONS]
    if others:
        raise ReportRefused(
            f"{out_dir} no longer matches its manifest; write the report elsewhere with --output",
            [d.message for d in others],
        )
    signed = signature_status(out_dir)[0] != "unsigned"
    panel = panel_from_manifest(manifest, "unsigned", note=RENEW if signed else "")
    path = write_report(out_dir, None, progress, provenance=panel)
    present = [out_dir / name for name in sorted(ANNOTATIONS) if (out_dir / name).is_file()]
    fresh = [OutputFile(path=p.name, sha256=sha256_file(p), size=p.stat().st_size) for p in present]
    kept = (o for o in manifest.iter_outputs(out_dir) if o.path not in ANNOTATIONS)
    # both streams are in path order: merged, the list stays in order without being held
    outputs = write_outputs(out_dir, heapq.merge(kept, fresh, key=lambda o: o.path))
    write_manifest(out_dir, manifest.model_copy(update={"outputs": outputs}))
    if signed:
        (out_dir / SIGNATURE_NAME).unlink(missing_ok=True)
    return Rerendered(path, manifest_updated=True, signature_removed=signed)

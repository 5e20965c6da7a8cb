"""The `reproduce` service: re-run a finished run from its manifest and compare the verdicts.

Why the checks before the run: a re-run on a different dataset or different judge weights
that "does not reproduce" proves nothing, and one that does would be luck. So the input must
hash to the manifest's input and the judge's weights to its weights before any work; the judge
cache is off (cached answers would only replay the first run), and the backend the first run
actually used is pinned (a profile's `auto` may pick another backend on another host).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console

from nexagauge_local.app.audit import collect_judge
from nexagauge_local.app.errors import ReproduceRefused, ReproduceSetupError
from nexagauge_local.app.judge import resolve_judge
from nexagauge_local.app.run import RunResult, run
from nexagauge_local.audit import (
    HashMemo,
    ManifestError,
    ReproReport,
    compare_runs,
    read_manifest,
    rerun_plan,
    sha256_file,
)
from nexagauge_local.dataset import Dataset
from nexagauge_local.graph import BLOCKS
from nexagauge_local.settings import RunSettings

__all__ = ["ReproduceRefused", "ReproduceSetupError", "Reproduction", "reproduce"]


@dataclass(frozen=True)
class Reproduction:
    report: ReproReport
    run: RunResult


def _settings(plan_settings: dict[str, object], new_dir: Path, backend: str | None) -> RunSettings:
    renamed = {"gpus": "gpu_ids"}  # manifests written before the setting's rename (issue 34)
    known = {renamed.get(k, k): v for k, v in plan_settings.items()}
    known = {k: v for k, v in known.items() if k in RunSettings.model_fields}
    known.update(output_dir=new_dir, use_cache=False, overwrite=False)
    if backend is not None:
        known["backend"] = backend
    return RunSettings.model_validate(known)


def reproduce(
    outdir: str | os.PathLike[str],
    new_dir: str | os.PathLike[str],
    *,
    input_path: str | os.PathLike[str] | None = None,
    tolerance: float = 0.0,
    console: Console | None = None,
    argv: list[str] | None = None,
) -> Reproduction:
    """Re-run `outdir`'s run into `new_dir` (no judge cache) and compare case by case."""
    try:
        manifest = read_manifest(outdir)
    except ManifestError as exc:
        raise ReproduceSetupError(str(exc)) from None
    new = Path(new_dir)
    if new.resolve() == Path(outdir).resolve():
        raise ReproduceSetupError(f"--output-dir {new}: must differ from the run being reproduced")
    plan = rerun_plan(manifest, new)
    src = Path(input_path) if input_path is not None else (
        Path(plan.input_path) if plan.input_path else None
    )
    if src is None or not src.is_file():
        raise ReproduceSetupError(
            f"{src or 'the input'}: not found (the run read {plan.input_path!r}); pass --input FILE"
        )
    actual = sha256_file(src)
    if actual != plan.input_sha256:
        raise ReproduceRefused(
            f"{src}: not the input this run read (sha256 {actual[:16]}, manifest "
            f"{(plan.input_sha256 or '-')[:16]}); `verify OUTDIR --input {src}` lists the records"
        )
    settings = _settings(plan.settings, new, manifest.judge.backend if manifest.judge else None)
    if manifest.judge is not None:
        factory = resolve_judge(settings)
        facts = collect_judge(factory, HashMemo(settings.cache_dir / "audit"))
        if facts.weights_sha256 != manifest.judge.weights_sha256:
            raise ReproduceRefused(
                f"{facts.weights_path}: judge weights differ from the manifest's (sha256 "
                f"{facts.weights_sha256[:16]}, manifest {manifest.judge.weights_sha256[:16]}); "
                f"`verify OUTDIR --model {facts.weights_path}` lists the files"
            )
    fmt = manifest.input.format if manifest.input else None
    result = run(
        settings,
        lambda tmp: Dataset(src, settings.field_map, settings.limit, fmt=fmt, blocks=BLOCKS),
        console=console,
        argv=argv,
    )
    return Reproduction(compare_runs(outdir, new, tolerance), result)

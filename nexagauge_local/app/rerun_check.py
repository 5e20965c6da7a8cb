"""The `reproduce` service: re-run a finished run from its manifest and compare the verdicts.

Why the checks before the run: a re-run on a different dataset or different judge weights
that "does not reproduce" proves nothing, and one that does would be luck. So the input must
hash to the manifest's input and the judge's weights to its weights before any work; the judge
cache is off (cached answers would only replay the first run), and the backend the first run
actually used is pinned (a profile's `auto` may pick another backend on another host).
A run configuration (`--config`) comes back with the settings: its recorded text is applied
again, never the file, which may have moved or changed since (`verify --config` says whether
it did).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import get_args

from nexagauge_local.app.errors import ReproduceRefused, ReproduceSetupError
from nexagauge_local.app.judge import resolve_judge, with_model
from nexagauge_local.app.run import RunResult, run
from nexagauge_local.app.run_facts import collect_judge
from nexagauge_local.audit import (
    HashMemo,
    InputFacts,
    JudgeFacts,
    Manifest,
    ManifestError,
    ReproReport,
    compare_runs,
    read_manifest,
    rerun_plan,
)
from nexagauge_local.audit.inputs import input_identity, same_input
from nexagauge_local.dataset import Dataset
from nexagauge_local.events import RunEvents
from nexagauge_local.graph import BLOCKS
from nexagauge_local.readers import FORMATS, is_stream
from nexagauge_local.readers.streams import spool_path
from nexagauge_local.redact import URL_SETTINGS, has_credentials, redact_url
from nexagauge_local.settings import ENDPOINT_FIELDS, RunSettings

__all__ = ["ReproduceRefused", "ReproduceSetupError", "Reproduction", "reproduce"]


@dataclass(frozen=True)
class Reproduction:
    report: ReproReport
    run: RunResult


BACKEND_CHOICES: tuple[str, ...] = get_args(RunSettings.model_fields["backend"].annotation)


def _settings(plan_settings: dict[str, object], new_dir: Path, backend: str | None) -> RunSettings:
    renamed = {"gpus": "gpu_ids"}  # manifests written before the setting's rename
    known = {renamed.get(k, k): v for k, v in plan_settings.items()}
    known = {k: v for k, v in known.items()
             if k in RunSettings.model_fields or k in ENDPOINT_FIELDS}
    known.update(output_dir=new_dir, use_cache=False, overwrite=False)
    for name in URL_SETTINGS:
        recorded = known.get(name)
        if isinstance(recorded, str) and has_credentials(recorded):
            known[name] = _unredacted(name, recorded)
    if backend is not None:
        known["backend"] = backend
    return RunSettings.model_validate(known)


def _unredacted(name: str, recorded: str) -> str:
    """A URL the manifest keeps redacted (its password and secret parameters are never
    written), whole again from its environment variable (NEXAGAUGE_JUDGE_URL,
    NEXAGAUGE_CLUSTER): ReproduceSetupError unless that variable holds the same URL."""
    var = f"NEXAGAUGE_{name.upper()}"
    given = os.environ.get(var, "")
    if not given:
        raise ReproduceSetupError(f"the run's {name.replace('_', '-')} {recorded} carried "
                                  f"credentials, which the manifest does not keep; set {var} "
                                  "to the whole URL")
    if redact_url(given) != recorded:
        raise ReproduceSetupError(f"{var} is {redact_url(given)}, not the run's "
                                  f"{name.replace('_', '-')} {recorded}")
    return given


def reproduce(
    outdir: str | os.PathLike[str],
    new_dir: str | os.PathLike[str],
    *,
    input_path: str | os.PathLike[str] | None = None,
    tolerance: float = 0.0,
    events: RunEvents | None = None,
    argv: list[str] | None = None,
) -> Reproduction:
    """Re-run `outdir`'s run into `new_dir` (no judge cache) and compare case by case;
    `events` watches the re-run (app.run.run)."""
    try:
        manifest = read_manifest(outdir)
    except ManifestError as exc:
        raise ReproduceSetupError(str(exc)) from None
    new = Path(new_dir)
    if new.resolve() == Path(outdir).resolve():
        raise ReproduceSetupError(f"--output-dir {new}: must differ from the run being reproduced")
    plan = rerun_plan(manifest, new)
    inp = manifest.input
    if input_path is None and inp is not None and inp.origin in ("stream", "memory"):
        what = "a stream (a pipe or stdin)" if inp.origin == "stream" else "records in memory"
        raise ReproduceSetupError(
            f"{inp.path}: the run read {what}, which cannot be read again; pass --input FILE "
            "(or a pipe) holding the same bytes or the same records")
    src = Path(input_path) if input_path is not None else (
        Path(plan.input_path) if plan.input_path else None
    )
    if src is None or inp is None or not src.exists():
        raise ReproduceSetupError(
            f"{src or 'the input'}: not found (the run read {plan.input_path!r}); pass --input FILE"
        )
    # the backend the run used is pinned; a judge server's ("endpoint") is no --backend choice:
    # its settings (judge_url, a profile) name it again
    used = manifest.judge.backend if manifest.judge else None
    settings = _settings(plan.settings, new, used if used in BACKEND_CHOICES else None)
    with tempfile.TemporaryDirectory(prefix="nexagauge-reproduce-") as tmp:
        dataset = _checked_input(src, inp, settings, Path(tmp))  # before the judge is loaded
        _check_weights(manifest, settings)
        result = run(settings, lambda _: dataset, events=events, argv=argv)
    full = manifest.judge is not None and manifest.judge.batch_invariant
    return Reproduction(compare_runs(outdir, new, tolerance, full), result)


def _check_weights(manifest: Manifest, settings: RunSettings) -> None:
    """ReproduceRefused unless every judge's weights here are the manifest's: the default
    judge's and those of the nodes that had their own (`--model NODE=PROFILE`, which the
    manifest's settings carry into the re-run as node_models)."""
    memo = HashMemo(settings.cache_dir / "audit")
    wanted = [("judge", manifest.judge)] if manifest.judge is not None else []
    wanted += [(f"judge of {node}", j) for node, j in manifest.node_judges.items()]
    here: dict[str, JudgeFacts] = {}  # the re-run's judges by profile name
    if wanted:
        for model in dict.fromkeys([settings.model, *settings.node_models.values()]):
            found = collect_judge(resolve_judge(with_model(settings, model)), memo)
            here.setdefault(found.profile, found)
    for what, recorded in wanted:
        if recorded.profile not in here:
            raise ReproduceRefused(f"the run's {what} was profile {recorded.profile!r}, which "
                                   "its settings no longer name here")
        facts = here[recorded.profile]
        if facts.weights_sha256 != recorded.weights_sha256:
            raise ReproduceRefused(
                f"{facts.weights_path}: {what} weights differ from the manifest's (sha256 "
                f"{facts.weights_sha256[:16]}, manifest {recorded.weights_sha256[:16]}); "
                f"`verify OUTDIR --model {facts.weights_path}` lists the files"
            )


def _checked_input(src: Path, facts: InputFacts, settings: RunSettings, tmp: Path) -> Dataset:
    """The re-run's dataset, once it is known to be the run's input (a pipe is read into `tmp`
    first): the same bytes, or the same records in other bytes; ReproduceRefused otherwise."""
    stream = is_stream(src)
    path = spool_path(src, tmp, str(src)) if stream else src
    same = same_input(path, facts)
    if same is None:
        actual = input_identity(path)[1]
        raise ReproduceRefused(
            f"{src}: not the input this run read (sha256 {actual[:16]}, manifest "
            f"{facts.sha256[:16]}); `verify OUTDIR --input {src}` lists the records"
        )
    fmt = facts.format if same == "bytes" and facts.format in FORMATS else None
    return Dataset(path, settings.field_map, settings.limit, display=str(src) if stream else None,
                   fmt=fmt, blocks=BLOCKS, origin="stream" if stream else "file",
                   start=settings.start, end=settings.end)

"""The `generate` service: answer probes with the model under test, ready for `run redteam`.

Three steps, so a caller can show progress between them: read the probes (bad lines stop
everything), open the responder (a missing model, or a target server that cannot be used,
stops before any work), answer them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from nexagauge_local.app.errors import AppError, InputError, JudgeSetupError, ProbeFileError
from nexagauge_local.judge import (
    NoLocalEngine,
    ProfileNotFound,
    WeightsMissing,
    resolve_profile,
)
from nexagauge_local.judge.endpoint import EndpointUnusable
from nexagauge_local.redteam.service.suites import suite_fields
from nexagauge_local.redteam.suites.probe_file import ProbeItem, read_probes
from nexagauge_local.redteam.target.endpoint import TargetOptions, open_endpoint
from nexagauge_local.redteam.target.factory import make_responder, responder_decision
from nexagauge_local.redteam.target.run import GenerateStats, TargetAsk, generate
from nexagauge_local.redteam.target.types import Responder


class TargetSetupError(AppError):
    """The target server cannot be used as given: unreachable, a refused key, no model list,
    a model it does not serve (exit 2, before any work)."""


def load_probes(path: Path, limit: int | None = None, fields: Sequence[str] = ()) -> list[ProbeItem]:
    """The probes in `path` (the first `limit`), in any suite layout, `fields` being `--field
    LOGICAL=COLUMN` pairs; a malformed pair is an InputError, any bad line a ProbeFileError."""
    items, errors = read_probes(path, suite_fields(fields))
    if errors:
        raise ProbeFileError(path, errors)
    return items[:limit] if limit else items


def target_options(url: str | None, api_key: str | None, concurrency: int | None,
                   served_model: str | None = None) -> TargetOptions | None:
    """The target server the command line names (None without --target-url); a malformed
    value is a TargetSetupError."""
    if url is None:
        return None
    values: dict[str, Any] = {"url": url, "api_key": api_key, "served_model": served_model}
    if concurrency is not None:
        values["concurrency"] = concurrency
    try:
        return TargetOptions.of(**values)
    except EndpointUnusable as exc:
        raise TargetSetupError(str(exc)) from None


def open_target(
    model: str | None,
    target: TargetOptions | None,
    *,
    backend: str,
    gpu_ids: Sequence[int],
    cache_dir: Path,
    seed: int,
    batch_size: int | None,
    on_note: Callable[[str], None] | None = None,
    engines: int = 1,
    sharing: str = "",
) -> Responder:
    """The model under test: behind `target`'s server when one is given (`model`, if any, is
    then the served model id), else loaded locally from `model`: an unknown profile or absent
    weights is a JudgeSetupError (the judge's resolution rules), and its engine, dtype and
    devices are decided once, the responder built from that decision. The server is asked
    which models it serves before any work, so every set-up problem is one line. `on_note`
    hears what the decision does otherwise than asked (the hf engine takes one of the GPUs
    --gpu names), as a run's judge says it. `engines` > 1: so many local engines of the
    command (`sharing` names them) hold the same GPUs at once, and a vLLM target reserves its
    part of their memory (JudgeDecision.shared_by)."""
    if target is None:
        if model is None:
            raise InputError("--model is required (a profile or weights), or --target-url")
        try:
            profile = resolve_profile(model)
            decision = responder_decision(profile, backend=backend, gpu_ids=gpu_ids)
            decision = decision.shared_by(engines, sharing)
            if on_note is not None:
                for note in decision.notes:
                    on_note(note)
            return make_responder(profile, decision, cache_dir=cache_dir, seed=seed,
                                  batch_size=batch_size)
        except (WeightsMissing, ProfileNotFound) as exc:
            raise JudgeSetupError(str(exc)) from None
        except NoLocalEngine as exc:
            raise JudgeSetupError(f"--model {model}: {exc}") from None
    if gpu_ids or backend != "auto":
        raise InputError("--target-url: the server runs the model on its own devices; drop "
                         "--backend and --gpu")
    if model is not None:
        target = target.model_copy(update={"served_model": model})
    try:
        return open_endpoint(target, seed=seed)
    except EndpointUnusable as exc:
        raise TargetSetupError(str(exc)) from None


def answer_probes(items: Sequence[ProbeItem], responder: Responder, output: Path,
                  how: TargetAsk, progress: Callable[[int], None] | None = None) -> GenerateStats:
    """Answer every probe not already in `output` (all of them without `how.resume`), then
    close the responder whatever happens."""
    try:
        return generate(items, responder, output, how, progress)
    finally:
        responder.close()

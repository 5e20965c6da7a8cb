"""Per-node judge estimates for `estimate TARGET`: the front door over recorder + cost."""

from __future__ import annotations

from typing import Any

from nexagauge_local.dataset import Dataset
from nexagauge_local.estimate.cost import TokenCounting, estimate_llm, load_calibration
from nexagauge_local.estimate.recorder import RecordingJudge, estimate_registry, stand_in_sources
from nexagauge_local.events import NullEvents, RunEvents
from nexagauge_local.graph import GRAPH, judged_nodes, plan
from nexagauge_local.judge import JudgeCache, JudgeProfile
from nexagauge_local.settings import RunSettings


def judge_estimates(
    dataset: Dataset,
    settings: RunSettings,
    counter: TokenCounting,
    fingerprint: str,
    *,
    events: RunEvents | None = None,
    max_model_len: int | None = None,
    profile: JudgeProfile | None = None,
) -> dict[str, dict[str, Any]]:
    """{llm node: estimate_llm(...) + basis} for every LLM node TARGET plans, without weights.
    The recording run is silent unless `events` is given: an estimate prints a table only.
    `profile` is the judge's: its requests are recorded in its judge_format (a guard family's
    own prompt), as the real run would send them."""
    from nexagauge_local.runner import Runner

    llm_nodes = judged_nodes(plan(settings.target))
    if not llm_nodes:
        return {}
    recorder = RecordingJudge.asking_as(profile) if profile is not None else RecordingJudge()
    quiet = settings.model_copy(update={"output_dir": None})
    Runner(
        quiet,
        registry=estimate_registry(GRAPH),
        judge_factory=lambda: recorder,
        events=events if events is not None else NullEvents(),
    ).run(dataset)
    proxied = stand_in_sources(GRAPH)
    cache = JudgeCache(settings.cache_dir) if settings.use_cache else None
    calibration = load_calibration(settings.cache_dir, fingerprint)
    history = cache.output_history(fingerprint) if cache is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for node in llm_nodes:
        est = estimate_llm(
            recorder.requests.get(node, []),
            counter,
            calibration,
            cache=cache,
            fingerprint=fingerprint,
            seed=settings.seed,
            max_model_len=max_model_len,
            history=history,
        )
        est["basis"] = (
            f"requests built from stand-in {proxied[node]} (judge answers not known yet)"
            if node in proxied
            else "exact requests"
        )
        out[node] = est
    return out

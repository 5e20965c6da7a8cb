"""Turn a node's judge requests into predicted tokens and device-seconds.

Prompt tokens are exact (the judge's own tokenizer and chat template, no weights). Output
tokens, per request, come from the judge cache's history of this judge and schema (the mean of
every answer it generated for that schema, once it has MIN_HISTORY of them), else from
`calibrate` when it measured the same schema, else max_tokens x the calibrated fill ratio, else
half the schema bound; the spread is the history's standard deviation, summed over requests as
independent answers. The bound-based guess came out 7.3x over a real run on the peer sample:
the schema bound says how long an answer may be, not how long a judge writes. Device-seconds
come from a cost model fitted to the judge's own answers (seconds_model.py), else a calibration
for this judge fingerprint; without either they are None rather than a guess.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from nexagauge_local.estimate.seconds_model import fit_seconds
from nexagauge_local.judge import (
    JudgeCache,
    JudgeRequest,
    Messages,
    OutputHistory,
    answers_in_cache,
    judge_request_key,
    schema_id,
)

CALIBRATION_VERSION = 1
MIN_HISTORY = 3  # answers of one judge for one schema before their mean is trusted


class TokenCounting(Protocol):
    def count_tokens(self, messages: Messages) -> int: ...


@runtime_checkable
class RequestCounting(Protocol):
    """A counter that renders a whole request (TokenCounter): a guard family's request is
    counted in its own prompt, which the messages alone do not give."""

    def count_request(self, request: JudgeRequest) -> int: ...


def request_tokens(counter: TokenCounting, request: JudgeRequest) -> int:
    """Prompt tokens of `request` as the judge is asked it."""
    if request.guard is not None and isinstance(counter, RequestCounting):
        return counter.count_request(request)
    return counter.count_tokens(request.messages)


def calibration_path(cache_dir: Path, fingerprint: str, device: str) -> Path:
    digest = hashlib.sha256(f"{fingerprint}|{device}".encode()).hexdigest()[:20]
    return cache_dir / "calibration" / f"{digest}.json"


def load_calibration(cache_dir: Path, fingerprint: str) -> dict[str, Any] | None:
    """The newest calibration for this judge fingerprint on any device of this host."""
    folder = cache_dir / "calibration"
    found = []
    for p in folder.glob("*.json") if folder.is_dir() else []:
        try:
            data = json.loads(p.read_text())
        except (OSError, ValueError):
            continue
        if data.get("fingerprint") == fingerprint and data.get("version") == CALIBRATION_VERSION:
            found.append(data)
    return max(found, key=lambda d: d.get("measured_at", "")) if found else None


def estimate_llm(
    requests: Sequence[JudgeRequest],
    backend_tokenizer_only: TokenCounting,
    calibration: dict[str, Any] | None,
    *,
    cache: JudgeCache | None = None,
    fingerprint: str | None = None,
    seed: int = 0,
    max_model_len: int | None = None,
    history: dict[str, OutputHistory] | None = None,
) -> dict[str, Any]:
    """Predict a node's judge cost; requests already cached (same key a run would use) and
    in-node duplicates cost nothing. With `max_model_len`, requests whose prompt + max_tokens
    exceed it are listed (`over_context`): a run fails them (or, opted in, cuts them)."""
    unique: dict[str, JudgeRequest] = {}
    for r in requests:
        k = (
            judge_request_key(fingerprint, r, seed=seed)
            if fingerprint
            else json.dumps([r.messages, schema_id(r.schema), r.max_tokens,
                             r.guard.key_material() if r.guard is not None else None])
        )
        unique.setdefault(k, r)
    # what a run would serve from the cache: a cached answer that failed is asked again
    cached = set(answers_in_cache(cache, unique).served) if fingerprint else set()
    todo = [r for k, r in unique.items() if k not in cached]
    schemas = (calibration or {}).get("schemas", {})
    fill = (calibration or {}).get("fill_ratio")
    counts = [request_tokens(backend_tokenizer_only, r) for r in todo]
    prompt_tokens = sum(counts)
    over = [
        {"case_id": r.case_id, "metric": r.metric, "prompt_tokens": n, "max_tokens": r.max_tokens}
        for r, n in zip(todo, counts)
        if max_model_len is not None and n + r.max_tokens > max_model_len
    ]
    variance = 0.0
    predicted: list[float] = []
    sources: Counter[str] = Counter()
    for r in todo:
        sid = schema_id(r.schema)
        seen = (history or {}).get(sid)
        known = schemas.get(sid)
        if seen is not None and seen.n >= MIN_HISTORY:
            predicted.append(seen.mean)
            variance += seen.std**2
            sources["history"] += 1
        elif known:
            predicted.append(known["mean_output_tokens"])
            sources["calibration"] += 1
        elif fill:
            predicted.append(r.max_tokens * fill)
            sources["calibration fill ratio"] += 1
        else:
            predicted.append(r.max_tokens / 2)
            sources["schema_bounds/2"] += 1
    output_tokens = sum(predicted)
    gpu_seconds, seconds_source = _device_seconds(todo, counts, predicted, history or {},
                                                  calibration)
    return {
        "requests": len(requests),
        "unique": len(unique),
        "cached": len(cached),
        "uncached": len(todo),
        "prompt_tokens": prompt_tokens,
        "output_tokens": round(output_tokens),
        "output_spread": round(variance**0.5),  # one standard deviation, from the history
        "output_source": sources.most_common(1)[0][0] if sources else "none",
        "output_sources": dict(sources),
        "gpu_seconds": gpu_seconds,
        "gpu_seconds_source": seconds_source,
        "device": (calibration or {}).get("device"),
        "over_context": over,
    }


def _device_seconds(
    todo: Sequence[JudgeRequest],
    prompt_counts: Sequence[int],
    predicted: Sequence[float],
    history: dict[str, OutputHistory],
    calibration: dict[str, Any] | None,
) -> tuple[float | None, str | None]:
    """Device-seconds: each request's prompt and predicted output tokens through this judge's
    own cost model for the schema, fitted to its recent answers on real runs (the cache's
    history, seconds_model.py), else its one rate per token when it has too few answers for the
    fit (a short calibration probe measured the demo judge 5x faster than its real redteam
    run), else the calibration's per-token rates; None when some request has none of them."""
    total, sources = 0.0, set()
    models = {sid: fit_seconds(h.samples) for sid, h in history.items()}
    for r, n, out in zip(todo, prompt_counts, predicted, strict=True):
        sid = schema_id(r.schema)
        seen, model = history.get(sid), models.get(sid)
        if model is not None:
            total += model.predict(n, out)
            sources.add("history model")
        elif seen is not None and seen.n >= MIN_HISTORY and seen.seconds_per_token:
            total += (n + out) * seen.seconds_per_token
            sources.add("history")
        elif calibration:
            total += (n * calibration["seconds_per_prompt_token"]
                      + out * calibration["seconds_per_output_token"])  # fmt: skip
            sources.add("calibration")
        else:
            return None, None
    if not todo:
        return (0.0, None) if calibration or history else (None, None)
    return total, "+".join(sorted(sources))

"""What the judge cache serves: a cached entry re-parsed against the request's current schema,
and only an answer that parses is served. A cached answer that did not parse or was cut at
max_tokens is asked again (and counted as retried): what failed may have failed for a reason
since mended (a server that ignored the schema, a parser bug, a max_tokens too small), and a
failure served from the cache would stay a failure until `--no-cache` threw every good answer
away with it.

The judge client and `estimate` both read the cache through here, so `estimate` counts as free
exactly the answers a run would serve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from nexagauge_local.judge.cache import CacheEntry, JudgeCache
from nexagauge_local.judge.schemas import parse_request_answer
from nexagauge_local.judge.types import JudgeRequest, JudgeResult


@dataclass
class CachedAnswers:
    """`served`: key -> the cached answer a run uses; `failed`: keys cached with an answer
    that failed (unparsed or truncated), to be asked again."""

    served: dict[str, JudgeResult] = field(default_factory=dict)
    failed: set[str] = field(default_factory=set)


def from_cache(entry: CacheEntry, request: JudgeRequest) -> JudgeResult:
    """The cached raw text as a result, parsed against the request's schema now (so a
    parser fix applies to old entries); no device time charged."""
    parsed, error, failure = parse_request_answer(
        request, entry.raw_text, hit_max_tokens=entry.output_tokens >= request.max_tokens
    )
    return JudgeResult(
        parsed=parsed,
        raw_text=entry.raw_text,
        prompt_tokens=entry.prompt_tokens,
        output_tokens=entry.output_tokens,
        gpu_seconds=0.0,
        error=error,
        failure=failure,
        cached=True,
        token_logprobs=entry.logprobs if request.want_logprobs else None,
        extra={"cached_gpu_seconds": entry.gpu_seconds}
        | ({"logprob_source": "cache"} if request.want_logprobs and entry.logprobs else {}),
    )


def answers_in_cache(cache: JudgeCache | None,
                   requests: Mapping[str, JudgeRequest]) -> CachedAnswers:
    """The cache's answers to `requests` (key -> request): served, or failed and re-asked."""
    out = CachedAnswers()
    if cache is None:
        return out
    for key, entry in cache.get_many(requests).items():
        result = from_cache(entry, requests[key])
        if result.error is None:
            out.served[key] = result
        else:
            out.failed.add(key)
    return out

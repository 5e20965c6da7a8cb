"""The local judge: one front door over constrained-decoding backends.

What the rest of the package may use is exported here (and from the sub-packages' own
`__init__`: `judge.prompts` for node prompts, `judge.runtime` for devices, weights and
tokenizers, `judge.vllm` and `judge.hf` for the engines, `judge.endpoint` for a judge
server); tests/test_architecture.py fails an import that reaches past them into a module.
Inside, a backend-independent core (types, protocol, client, cache, ledger, schemas, profiles,
long inputs, factory) sits above two engine sub-packages, `hf/` and `vllm/`, and `endpoint/`
(an OpenAI-compatible server as the judge), which only the factory builds. Importing this
package loads no torch, transformers or vLLM.
"""

from nexagauge_local.judge.cache import DB_NAME as JUDGE_DB
from nexagauge_local.judge.cache import (
    CacheStats,
    JudgeCache,
    OutputHistory,
    judge_request_key,
    request_key,
)
from nexagauge_local.judge.cached_answers import CachedAnswers, answers_in_cache
from nexagauge_local.judge.client import Executor, JudgeClient
from nexagauge_local.judge.cpu_auto import AUTO_COUNT_CAP, JUDGEMENTS_PER_UNIT
from nexagauge_local.judge.decision import (
    JudgeDecision,
    NoGPU,
    NoLocalEngine,
    check_gpu_request,
    cpu_auto_open,
    decide,
)
from nexagauge_local.judge.factory import (
    BackendFactory,
    GrammarUnsupported,
    check_vllm_imports,
    choose_backend,
    make_backend_factory,
)
from nexagauge_local.judge.ledger import CostLedger, NodeUsage, usd
from nexagauge_local.judge.long_inputs import LongInputs
from nexagauge_local.judge.profiles import (
    DEMO_NOTICE,
    JudgeProfile,
    ProfileNotFound,
    WeightsMissing,
    expand_weights,
    list_profiles,
    resolve_profile,
    vllm_distribution,
)
from nexagauge_local.judge.protocol import Judge
from nexagauge_local.judge.schemas import (
    DEFAULT_REASONING_CHARS,
    GuardAnswer,
    StrictSchema,
    bounded_list,
    bounded_str,
    cached_builder,
    max_tokens_for,
    parse_answer,
    parse_output,
    parse_request_answer,
    reasoning_field,
    schema_id,
    schema_suffix,
)
from nexagauge_local.judge.tapped import TappedJudge
from nexagauge_local.judge.types import (
    Backend,
    FailureKind,
    GuardAsk,
    JudgeRequest,
    JudgeResult,
    JudgeStartError,
    Messages,
)
from nexagauge_local.sqlite_store import CacheDamaged, CacheStoreError, CacheWriteError

__all__ = [  # noqa: RUF022 (grouped by purpose, not sorted)
    # the protocol nodes call, and what travels through it
    "Judge", "TappedJudge", "JudgeRequest", "JudgeResult", "FailureKind", "Messages", "Backend",
    "GuardAsk", "GuardAnswer", "JudgeStartError",
    # the client, its cache and its cost ledger
    "JudgeClient", "Executor", "JudgeCache", "JUDGE_DB", "CacheStats", "CacheWriteError",
    "CacheDamaged", "CacheStoreError", "OutputHistory",
    "judge_request_key",
    "request_key", "CachedAnswers", "answers_in_cache",
    "CostLedger", "NodeUsage", "usd", "LongInputs",
    # which judge, and which backend builds it
    "JudgeProfile", "ProfileNotFound", "WeightsMissing", "DEMO_NOTICE", "expand_weights",
    "list_profiles", "resolve_profile", "vllm_distribution",
    "BackendFactory", "GrammarUnsupported", "check_vllm_imports", "choose_backend",
    "make_backend_factory", "AUTO_COUNT_CAP", "JUDGEMENTS_PER_UNIT",
    "JudgeDecision", "NoLocalEngine", "decide", "NoGPU", "check_gpu_request", "cpu_auto_open",
    # the output-schema toolkit of LLM nodes
    "StrictSchema", "bounded_list", "bounded_str", "cached_builder", "max_tokens_for",
    "parse_answer", "parse_request_answer", "parse_output", "reasoning_field", "schema_id",
    "schema_suffix", "DEFAULT_REASONING_CHARS",
]

"""Assembly of the judge for a run: backend factory, cache, ledger and executor.

This module sits above judge/ and cluster/ so that neither needs the other's assembly: judge/
knows nothing of Ray or run settings, cluster/ only receives a BackendFactory. Here a run's
settings are turned into JudgeClients (answering in this process, or on a Ray cluster with
`--cluster`), and the pre-flight checks stop a run before any work when the judge cannot work.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Self

from nexagauge_local.app.errors import ClusterSetupError, JudgeSetupError
from nexagauge_local.cluster import ClusterUnavailable, connect_cluster, make_executor
from nexagauge_local.graph import JUDGED_NODES
from nexagauge_local.judge import (
    BackendFactory,
    CostLedger,
    Executor,
    GrammarUnsupported,
    JudgeCache,
    JudgeClient,
    JudgeStartError,
    LongInputs,
    Messages,
    NoGPU,
    ProfileNotFound,
    WeightsMissing,
    check_gpu_request,
    check_vllm_imports,
    make_backend_factory,
)
from nexagauge_local.judge.endpoint import (
    EndpointConfig,
    EndpointHTTP,
    EndpointOptions,
    EndpointUnusable,
    ServerTokenCounter,
    check_endpoint,
)
from nexagauge_local.judge.runtime import TokenCounter, WeightsUnusable, check_loadable
from nexagauge_local.judge.vllm import VLLMMissing
from nexagauge_local.settings import RunSettings


def backend_factory(settings: RunSettings) -> BackendFactory:
    """The judge a run's settings name (profile, backend, GPUs); loads no weights."""
    return make_backend_factory(
        settings.model,
        backend=settings.backend,
        gpu_ids=settings.gpu_ids,
        cache_dir=settings.cache_dir,
        seed=settings.seed,
        grammar_backend=settings.grammar_backend,
        judgements=settings.predicted_judgements,
        endpoint=settings.endpoint,
    )


def resolve_judge(settings: RunSettings) -> BackendFactory:
    """backend_factory, with absent weights and an unknown or invalid profile reported as a
    JudgeSetupError (one line, exit 2) whose message says what to fix."""
    try:
        return backend_factory(settings)
    except (WeightsMissing, VLLMMissing, GrammarUnsupported, ProfileNotFound,
            EndpointUnusable) as exc:
        raise JudgeSetupError(str(exc)) from None


@contextmanager
def judge_start_errors() -> Iterator[None]:
    """An engine that could not start part-way through a run (judge/types.JudgeStartError)
    as the set-up failure it is: one line, exit 2, with where the run's work is."""
    try:
        yield
    except JudgeStartError as exc:
        raise JudgeSetupError(f"{exc}; every answer judged so far is in the judge cache: "
                              "mend the cause and run the same command again to resume"
                              ) from None


def check_gpus(settings: RunSettings) -> None:
    """`--gpu` on a host where torch sees no CUDA device: one JudgeSetupError line (exit 2)."""
    try:
        check_gpu_request(settings.gpu_ids)
    except NoGPU as exc:
        raise JudgeSetupError(str(exc)) from None


# The nodes `--model NODE=PROFILE` may name: the graph's LLM nodes.


def check_node_models(node_models: Mapping[str, str]) -> None:
    """Each NODE=PROFILE names an LLM node of the graph and a profile: else one JudgeSetupError
    line (exit 2), before any work."""
    for node, profile in node_models.items():
        if node not in JUDGED_NODES:
            raise JudgeSetupError(f"--model {node}={profile}: {node!r} is not an LLM node; "
                                  f"choose one of: {', '.join(JUDGED_NODES)}")
        if not profile.strip():
            raise JudgeSetupError(f"--model {node}=: no profile named after '='")


def with_model(settings: RunSettings, profile: str) -> RunSettings:
    """The settings with `profile` as the judge: how each node's judge is resolved. The
    --judge-* options describe the default judge's server, so they are dropped: a node's own
    judge (`--model NODE=PROFILE`) is its profile's, and a guard model on redteam stays
    in-process (or on its own profile's server) while the other nodes judge through
    --judge-url. The API key goes with them: a node's server gets only its profile's
    api_key_env."""
    if profile == settings.model:
        return settings
    return settings.model_copy(update={"model": profile, "endpoint": EndpointOptions()})


def judge_models(settings: RunSettings, nodes: Iterable[str]) -> dict[str, str]:
    """LLM node -> the profile that judges it (its own `--model NODE=PROFILE`, else the
    default `--model`), for the LLM nodes among `nodes`."""
    return {n: settings.node_models.get(n, settings.model) for n in nodes if n in JUDGED_NODES}


def own_models(settings: RunSettings, nodes: Iterable[str]) -> dict[str, str]:
    """The LLM nodes among `nodes` whose judge is not the default's, with their profile."""
    return {n: p for n, p in judge_models(settings, nodes).items() if p != settings.model}


# profile -> its judge's factory, carrying the decision (judge/decision.py) made for it once
# per run: the clients, the run's first line and the manifest all read these.
ResolvedJudges = dict[str, BackendFactory]


def preflight_judges(settings: RunSettings, nodes: Iterable[str]) -> ResolvedJudges:
    """preflight for each distinct judge the LLM nodes among `nodes` ask (profile -> its
    factory, the default first), all before any work; a failure names the node(s). Each
    profile's backend, grammar engine, dtype and devices are decided here, once."""
    by_profile: dict[str, list[str]] = {}
    for node, profile in judge_models(settings, nodes).items():
        by_profile.setdefault(profile, []).append(node)
    order = sorted(by_profile, key=lambda p: p != settings.model)  # the default first
    out: ResolvedJudges = {}
    for profile in order:
        try:
            out[profile] = preflight(with_model(settings, profile))
        except (JudgeSetupError, ClusterSetupError) as exc:
            if profile == settings.model:
                raise
            named = ", ".join(f"--model {n}={profile}" for n in by_profile[profile])
            raise type(exc)(f"{named}: {exc}") from None
    return share_gpus(out, settings)


def share_gpus(judges: ResolvedJudges, settings: RunSettings) -> ResolvedJudges:
    """A run's local judges on a GPU host all take the run's --gpu, and a run holds each one's
    engine until its last node of the last shard: so many share each GPU, and each vLLM engine
    reserves its part (JudgeDecision.shared_by). Servers hold no GPU here; a cluster's actors
    are placed by Ray."""
    local = [p for p, f in judges.items() if f.endpoint is None and f.decision.device == "cuda"]
    if len(local) < 2 or settings.cluster:
        return judges
    what = f"the run's {len(local)} judges ({', '.join(local)})"
    return {p: f.shared_by(len(local), what) if p in local else f for p, f in judges.items()}


def preflight(settings: RunSettings) -> BackendFactory:
    """Check, before any work, that the judge resolves and that `--cluster` is reachable: no
    Ray, a bad value or an unreachable cluster would otherwise surface as an error on every
    metric. Connecting is idempotent; the executor reuses the connection."""
    factory = resolve_judge(settings)
    if factory.endpoint is not None:
        return _endpoint_preflight(settings, factory)
    try:
        check_loadable(factory.profile)
        if factory.decision.backend == "vllm" and not settings.cluster:
            check_vllm_imports()
    except (WeightsUnusable, WeightsMissing, VLLMMissing) as exc:
        raise JudgeSetupError(str(exc)) from None
    if settings.cluster:
        try:
            connect_cluster(settings.cluster)
        except ClusterUnavailable as exc:
            raise ClusterSetupError(str(exc)) from None
    return factory


def _endpoint_preflight(settings: RunSettings, factory: BackendFactory) -> BackendFactory:
    """A judge server: reachable and serving the model (resolve_judge asked), then one probe
    request for its JSON-schema support. A cluster's workers would each need the server too,
    which this release does not do."""
    if settings.cluster:
        raise JudgeSetupError("--cluster with a judge server: the server already spreads the "
                              "work; drop --cluster")
    assert factory.endpoint is not None
    try:
        check_endpoint(factory.endpoint)
    except EndpointUnusable as exc:
        raise JudgeSetupError(str(exc)) from None
    return factory


def open_client(settings: RunSettings, factory: BackendFactory | None = None) -> JudgeClient:
    """The client a run uses: the judge `factory` resolved (else resolved from settings now),
    cache unless --no-cache, and the Ray executor when --cluster is set (its actors start on
    first use)."""
    cache = JudgeCache(settings.cache_dir) if settings.use_cache else None
    factory = factory if factory is not None else backend_factory(settings)
    ledger = CostLedger(device_seconds_known=factory.device_seconds_known)
    executor: Executor | None = None
    if settings.cluster:
        executor = make_executor(settings.cluster, factory, ledger)
    return JudgeClient(
        factory,
        cache,
        ledger,
        settings.gpu_hour_price,
        seed=settings.seed,
        decision=factory.decision,
        executor=executor,
        long_inputs=long_inputs_for(settings, factory),
    )


def long_inputs_for(settings: RunSettings, factory: BackendFactory) -> LongInputs:
    """The run's long-input policy against this judge's window; its token counter is the
    judge's tokenizer alone (no weights), built only if a prompt has to be measured."""
    return LongInputs(
        settings.long_inputs,
        factory.profile.max_model_len,
        lambda: token_counter(factory).count_tokens,
    )


def token_counter(factory: BackendFactory) -> TokenCounter | ServerCounter:
    """Exact prompt tokens for this judge: its tokenizer (no weights loaded), or for a judge
    server without local weights the server's own /tokenize (vLLM offers it; elsewhere the
    first count says, in one line, to give the profile a tokenizer folder)."""
    if factory.endpoint is not None and not factory.profile.weights:
        return ServerCounter(factory.endpoint)
    return TokenCounter(factory.profile, factory.cache_dir)


class ServerCounter:
    """ServerTokenCounter with its failure as a set-up error (one line, exit 2)."""

    def __init__(self, config: EndpointConfig) -> None:
        http = EndpointHTTP(config.url, config.api_key, timeout_seconds=30.0, connections=1)
        self._counter = ServerTokenCounter(http, config.model)

    def count_tokens(self, messages: Messages) -> int:
        try:
            return self._counter.count_tokens(messages)
        except EndpointUnusable as exc:
            raise JudgeSetupError(str(exc)) from None


class JudgeClients:
    """The runner's judge factory: opens a client per call (the default judge's, or with
    `opener`, a `--model NODE=PROFILE` judge's) and closes every one it opened on exit
    (data-parallel engines and cluster actors hold processes and GPUs). Every client of a
    profile is built from the one factory `resolved` holds for it (a run's preflight_judges),
    so a judge reopened for a later shard or node is the judge that was decided; a profile
    not pre-flighted is resolved on its first open and kept."""

    def __init__(self, settings: RunSettings, resolved: ResolvedJudges | None = None) -> None:
        self.settings = settings
        self.resolved: ResolvedJudges = dict(resolved or {})
        self.opened: list[JudgeClient] = []

    def __call__(self) -> JudgeClient:
        return self._open(self.settings)

    def opener(self, profile: str) -> Callable[[], JudgeClient]:
        """A factory of clients of `profile`'s judge (the run's other settings unchanged)."""
        return lambda: self._open(with_model(self.settings, profile))

    def _open(self, settings: RunSettings) -> JudgeClient:
        if settings.model not in self.resolved:
            self.resolved[settings.model] = resolve_judge(settings)
        self.opened.append(open_client(settings, self.resolved[settings.model]))
        return self.opened[-1]

    def close(self) -> None:
        for client in self.opened:
            client.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

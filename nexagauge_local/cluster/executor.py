"""ClusterExecutor: a node's uncached judge requests answered by a pool of Ray actors.

The JudgeClient still does everything around the backend (keys, dedupe, cache lookups, ledger);
the executor replaces only `backend.generate(misses)`. Ray is the engine (scheduling, object
transfer, failure detection); this module adds the judge-specific policy on top:

- a pool sized from `ray.cluster_resources()` (plan.py), each actor holding one backend built
  from the driver's own BackendFactory, refused if its fingerprint differs from the driver's
  (different weights or versions would answer under the wrong cache keys);
- token-balanced, contiguous batches; several per worker so a lost worker loses little;
- results streamed back with `ray.wait` and handed to `on_batch` as each batch lands, so the
  driver writes them to the cache at once: a killed driver or a lost worker loses nothing that
  finished;
- a failed batch retried on another actor up to `spec.retries` times, then answered with
  `backend: cluster ...` errors (never cached, so a rerun tries again) - never dropped.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from typing import Any

from nexagauge_local.cluster.plan import (
    PoolPlan,
    affordable,
    batch_count,
    plan_pool,
    token_balanced_batches,
)
from nexagauge_local.cluster.spec import ClusterSpec, ClusterUnavailable, import_ray, ray_version
from nexagauge_local.cluster.stats import ClusterStats, NodeRun, WorkerStats
from nexagauge_local.cluster.worker import JudgeWorker
from nexagauge_local.judge import (
    BackendFactory,
    CostLedger,
    FailureKind,
    JudgeRequest,
    JudgeResult,
    JudgeStartError,
    parse_request_answer,
)

OnBatch = Callable[[list[int], list[JudgeResult]], None]
CLUSTER_ERROR = "backend: cluster"


@dataclass
class _Batch:
    positions: list[int]
    attempts: int = 0
    tried: set[str] = field(default_factory=set)
    last_error: str = ""


@dataclass
class _Worker:
    name: str
    handle: Any
    stats: WorkerStats


def failed_result(error: str) -> JudgeResult:
    return JudgeResult.failed(FailureKind.BACKEND, error[:300])


def on_driver(request: JudgeRequest, result: JudgeResult) -> JudgeResult:
    """Re-attach the parsed object using the driver's schema class (see worker.py)."""
    if result.failure is not None:
        return result
    parsed, error, failure = parse_request_answer(request, result.raw_text)
    return replace(result, parsed=parsed, error=error, failure=failure)


def connect(spec: ClusterSpec) -> tuple[Any, bool]:
    """(ray, whether this call started the connection). Every Ray failure to reach the
    cluster becomes one ClusterUnavailable saying what to do."""
    ray = import_ray()
    if ray.is_initialized():
        return ray, False
    # ray.init installs its own SIGTERM handler (sys.exit(15)) in the driver; the caller's stays,
    # so a batch scheduler's SIGTERM still stops a --cluster run with the CLI's line and 143
    own = threading.current_thread() is threading.main_thread()
    term = signal.getsignal(signal.SIGTERM) if own else None
    try:
        ray.init(**spec.ray_init_kwargs())
    except Exception as exc:  # noqa: BLE001 - Ray raises several types for "cannot reach"
        if spec.address == "auto":
            hint = "start Ray on this host first (`ray start --head`), or use `local`"
        else:
            hint = (
                "check that the port is reachable and that this host has the cluster's auth "
                "token (RAY_AUTH_TOKEN or ~/.ray/auth_token); see docs/scale-out.md"
            )
        raise ClusterUnavailable(
            f"--cluster {spec.address}: cannot connect to Ray ({_short(exc).rstrip('.')}); {hint}."
        ) from None
    finally:
        if term is not None:
            signal.signal(signal.SIGTERM, term)
    return ray, True


class ClusterExecutor:
    """Answers requests on a Ray actor pool; see the module docstring for the policy."""

    def __init__(
        self,
        factory: BackendFactory,
        spec: ClusterSpec,
        *,
        ledger: CostLedger | None = None,
    ) -> None:
        self.factory = factory
        self.spec = spec
        self.ledger = ledger
        self.stats = ClusterStats()
        self._workers: dict[str, _Worker] = {}
        self._plan: PoolPlan | None = None
        self._owns_ray = False
        self._remote: Any = None
        self._run_id = uuid.uuid4().hex[:8]
        self._tokenizer: Any = None
        self._token_counter = ""
        self._resources: dict[str, float] = {}

    # ------------------------------------------------------------ connection and pool

    def connect(self) -> Any:
        """Join (or for `local`, start) the Ray cluster; idempotent. Returns the ray module."""
        ray, started = connect(self.spec)
        self._owns_ray = self._owns_ray or started
        self._resources = {
            k: float(v) for k, v in ray.cluster_resources().items() if k in ("CPU", "GPU", "memory")
        }
        return ray

    def _ensure_pool(self, ray: Any) -> None:
        """Top the pool up to the planned size with what the cluster can still hold.

        A pool that cannot start (a cluster without the GPUs the judge needs, no worker whose
        judge loads) is a JudgeStartError, not an error per request: no request was answered,
        so the run stops as at set-up (exit 2) instead of writing "judge failed" into every
        metric (exit 3), which would read as a judge that answered badly."""
        try:
            resources, gpus = ray.cluster_resources(), self.factory.profile.gpu_count
            plan = plan_pool(resources, self.factory.decision.backend, self.spec, gpus)
        except ClusterUnavailable as exc:
            raise self._start_error(exc) from None
        self._plan = plan
        missing = plan.workers - len(self._workers)
        if missing > 0:
            self._start(ray, plan, min(missing, affordable(ray.available_resources(), plan)))
        if not self._workers:
            why = "; ".join(f"{r['name']}: {r['reason']}" for r in self.stats.rejected[-3:])
            raise self._start_error(ClusterUnavailable(
                f"no judge worker could start on the Ray cluster ({why or 'no free resources'})"
            ))

    def _start_error(self, cause: ClusterUnavailable) -> JudgeStartError:
        return JudgeStartError(self.factory.profile.name, self.factory.decision.backend, cause)

    def _start(self, ray: Any, plan: PoolPlan, n: int) -> None:
        if n <= 0:
            return
        if self._remote is None:
            self._remote = ray.remote(JudgeWorker)
        # the driver's --gpu pinning means nothing on a worker: Ray sets its CUDA_VISIBLE_DEVICES
        worker_factory = self.factory.on_worker()
        threads = plan.num_cpus if plan.num_gpus == 0 else None
        pending: dict[Any, _Worker] = {}
        base = len(self.stats.workers) + len(self.stats.rejected)
        for i in range(n):
            name = f"judge-{self._run_id}-{base + i}"
            handle = self._remote.options(
                name=name,
                num_cpus=plan.num_cpus,
                num_gpus=plan.num_gpus,
                max_restarts=0,
                max_task_retries=0,
                scheduling_strategy="SPREAD",
            ).remote(worker_factory, threads)
            pending[handle.info.remote()] = _Worker(
                name, handle, WorkerStats(name=name, gpus=plan.num_gpus, cpus=plan.num_cpus)
            )
        ready, not_ready = ray.wait(
            list(pending), num_returns=len(pending), timeout=self.spec.start_timeout
        )
        for ref in not_ready:
            self._reject(ray, pending[ref], f"not ready within {self.spec.start_timeout:.0f}s")
        for ref in ready:
            worker = pending[ref]
            try:
                info = ray.get(ref)
            except Exception as exc:  # noqa: BLE001 - the actor's constructor failed
                self._reject(ray, worker, _short(exc))
                continue
            if info["fingerprint"] != self.factory.decision.fingerprint:
                self._reject(
                    ray,
                    worker,
                    f"judge fingerprint {info['fingerprint']} differs from "
                    f"the driver's {self.factory.decision.fingerprint} (same weights, copied with "
                    "mtimes kept, and the same package versions are needed)",
                )
                continue
            worker.stats = worker.stats.model_copy(
                update={
                    k: info[k]
                    for k in ("host", "pid", "node_id", "load_seconds", "cuda_visible_devices")
                }
            )
            self._workers[worker.name] = worker
            self.stats.workers[worker.name] = worker.stats
            if self.ledger is not None:
                self.ledger.record_load(float(info["load_seconds"]), plan.num_gpus)

    def _reject(self, ray: Any, worker: _Worker, reason: str) -> None:
        ray.kill(worker.handle, no_restart=True)
        self.stats.rejected.append({"name": worker.name, "reason": reason[:300]})

    def _lose(self, ray: Any, worker: _Worker, reason: str) -> None:
        worker.stats.lost, worker.stats.lost_reason = True, reason[:300]
        self._workers.pop(worker.name, None)
        with suppress(Exception):  # it is already gone
            ray.kill(worker.handle, no_restart=True)

    # ------------------------------------------------------------ token costs

    def _costs(self, texts: list[str], requests: Sequence[JudgeRequest]) -> list[int]:
        """Prompt tokens (the judge's tokenizer on the driver, one batched call, no weights)
        plus the decode budget. The chat template is left out: it adds the same few tokens to
        every request, which does not move a balance."""
        if self._tokenizer is None and not self._token_counter:
            try:
                from nexagauge_local.judge.runtime import load_tokenizer

                self._tokenizer = load_tokenizer(self.factory.profile, self.factory.cache_dir)
                self._token_counter = "tokenizer"
            except Exception:  # noqa: BLE001 - balance still works on an estimate
                self._token_counter = "chars/4"
        if self._tokenizer is not None:
            ids = self._tokenizer(texts, add_special_tokens=False)["input_ids"]
            prompt = [len(x) for x in ids]
        else:
            prompt = [len(t) // 4 + 1 for t in texts]
        return [p + r.max_tokens for p, r in zip(prompt, requests)]

    # ------------------------------------------------------------ the work

    def run(self, node: str, requests: Sequence[JudgeRequest], on_batch: OnBatch) -> None:
        """Answer every request; `on_batch(positions, results)` is called once per position,
        in the driver's thread, as each batch lands (successes and given-up errors alike)."""
        if not requests:
            return
        started = time.perf_counter()
        ray = self.connect()
        self._ensure_pool(ray)
        texts = ["\n".join(m["content"] for m in r.messages) for r in requests]
        costs = self._costs(texts, requests)
        # prompts in lexicographic (trie) order: neighbours share the longest prefixes, so each
        # contiguous batch is rubric-homogeneous, which is what prefix caching wants
        order = sorted(range(len(requests)), key=texts.__getitem__)
        n_batches = batch_count(len(requests), len(self._workers), self.spec)
        cut = token_balanced_batches([costs[i] for i in order], n_batches, self.spec.batch)
        pending = deque(_Batch([order[j] for j in b]) for b in cut)
        usage = self.stats.nodes.setdefault(node, NodeRun())
        usage.requests += len(requests)
        usage.batches += len(pending)
        usage.token_counter = self._token_counter
        try:
            self._drive(ray, requests, pending, on_batch, usage)
        finally:
            usage.wall_seconds += time.perf_counter() - started

    def _drive(
        self,
        ray: Any,
        requests: Sequence[JudgeRequest],
        pending: deque[_Batch],
        on_batch: OnBatch,
        usage: NodeRun,
    ) -> None:
        idle: deque[_Worker] = deque(self._workers.values())
        flights: dict[Any, tuple[_Batch, _Worker]] = {}
        while pending or flights:
            while pending and idle:
                batch = pending.popleft()
                worker = _pick(idle, batch)
                batch.tried.add(worker.name)
                ref = worker.handle.generate.remote([requests[i] for i in batch.positions])
                flights[ref] = (batch, worker)
            if not flights:  # work left and nobody alive to do it
                for batch in pending:
                    self._give_up(batch, "no live workers left", on_batch, usage)
                pending.clear()
                break
            t_wait = time.perf_counter()
            [ref], _ = ray.wait(list(flights), num_returns=1)
            usage.wait_seconds += time.perf_counter() - t_wait
            batch, worker = flights.pop(ref)
            try:
                results, wall = ray.get(ref)
            except ray.exceptions.RayActorError as exc:  # the worker process or its host died
                self._lose(ray, worker, _short(exc))
                self._retry(
                    batch, f"worker {worker.name} lost: {_short(exc)}", pending, on_batch, usage
                )
                continue
            except Exception as exc:  # noqa: BLE001 - the backend raised; the actor lives on
                worker.stats.failed_batches += 1
                idle.append(worker)
                self._retry(batch, f"on {worker.name}: {_short(exc)}", pending, on_batch, usage)
                continue
            idle.append(worker)
            worker.stats.record_batch(
                len(results),
                sum(r.prompt_tokens for r in results),
                sum(r.output_tokens for r in results),
                wall,
                self._devices(),
            )
            on_batch(
                batch.positions,
                [on_driver(requests[i], r) for i, r in zip(batch.positions, results)],
            )

    def _retry(
        self, batch: _Batch, error: str, pending: deque[_Batch], on_batch: OnBatch, usage: NodeRun
    ) -> None:
        batch.attempts += 1
        batch.last_error = error
        if batch.attempts > self.spec.retries:
            self._give_up(batch, error, on_batch, usage)
        else:
            usage.retried_batches += 1
            pending.appendleft(batch)

    def _give_up(self, batch: _Batch, error: str, on_batch: OnBatch, usage: NodeRun) -> None:
        usage.failed_requests += len(batch.positions)
        msg = f"{CLUSTER_ERROR}: batch failed after {batch.attempts} attempt(s): {error}"
        on_batch(batch.positions, [failed_result(msg) for _ in batch.positions])

    def _devices(self) -> int:
        return self._plan.device_count if self._plan else 1

    # ------------------------------------------------------------ reporting and teardown

    def describe(self) -> dict[str, Any]:
        """The `judge.cluster` block of summary.json."""
        plan = self._plan
        return {
            "engine": "ray",
            "ray_version": ray_version(),
            "spec": self.spec.describe(),
            "resources": self._resources,
            "plan": plan.describe() if plan is not None else None,
            "device": "GPU" if plan and plan.num_gpus else "CPU device-seconds",
            **self.stats.summary(),
        }

    def close(self) -> None:
        if not self._workers and not self._owns_ray:
            return
        ray = import_ray()
        if ray.is_initialized():
            for worker in list(self._workers.values()):
                with suppress(Exception):  # already gone
                    ray.kill(worker.handle, no_restart=True)
            if self._owns_ray:
                ray.shutdown()
        self._workers.clear()
        self._owns_ray = False


def _pick(idle: deque[_Worker], batch: _Batch) -> _Worker:
    """An idle worker that has not failed this batch yet, else any idle one."""
    for worker in idle:
        if worker.name not in batch.tried:
            idle.remove(worker)
            return worker
    return idle.popleft()


def _short(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


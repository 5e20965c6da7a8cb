"""Data-parallel vLLM: one engine per GPU (or CPU slice), each in its own spawned worker.

Why the process rules matter:
- Workers are *spawned* (a fresh interpreter: CUDA cannot be forked) and *non-daemonic*: vLLM's
  `LLM` starts an engine-core child process, and a daemonic process may not have children
  (vLLM issue 18308), so daemonic workers fail before any work.
- Non-daemonic workers would keep the interpreter from exiting if nobody stopped them, so the
  pool is always shut down: `close()` on the normal path and on errors (the backend's owner
  closes it in a `finally`), and a multiprocessing finalizer at interpreter exit (after a
  Ctrl-C or an exception that skipped `close`), which runs before multiprocessing joins
  non-daemonic children. A worker that does not stop when asked is terminated, then killed.
- CUDA_VISIBLE_DEVICES (or, on a CPU host, the worker's CPU slice) is set inside each worker
  before vllm is imported.
- A parent killed with `kill -9` takes its workers with it (PR_SET_PDEATHSIG, see
  `_worker_main`).
Requests are sharded contiguously by tokens (same-rubric prompts stay on one engine, which
keeps prefix-cache hits, and engines finish together); each worker streams its finished
requests back as they complete.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
import signal
from collections.abc import Callable, Sequence
from multiprocessing import util as mp_util
from typing import Any

from nexagauge_local.judge.vllm.engine import (
    WireRequest,
    import_vllm,
    run_engine,
    token_shards,
)
from nexagauge_local.judge.vllm.host import EngineHost
from nexagauge_local.libc import die_with_parent

STOP_TIMEOUT_S = 20.0
POLL_S = 1.0


def _worker_main(
    index: int, host: EngineHost, kwargs: dict[str, Any], seed: int, parent_pid: int,
    inbox: Any, outbox: Any,
) -> None:
    """Child process: pin its device *before* importing vllm, build the engine, serve shards.

    A parent killed with `kill -9` never sends the stop message, and the worker would wait in
    `inbox.get()` forever holding ~90% of its GPU: the kernel sends it SIGTERM when the parent
    dies, and stops its engine core before it goes (SIGKILL would leave that grandchild
    behind)."""
    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    # Ctrl-C reaches the whole process group; the parent alone decides (it stops the pool),
    # so a worker does not die mid-step with a traceback of its own on the user's terminal.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    die_with_parent(parent_pid, signal.SIGTERM)
    host.apply(owns_process=True)
    try:
        vllm = import_vllm()
        llm = vllm.LLM(**kwargs)
        outbox.put((index, "ready", os.getpid()))
    except Exception as exc:  # noqa: BLE001 - report to the parent instead of dying silently
        outbox.put((index, "error", repr(exc)))
        return
    while True:
        job = inbox.get()
        if job is None:
            return
        wire, stop_ids = job
        try:
            wall = run_engine(
                llm, vllm, wire, seed, stop_ids,
                lambda pos, raws, dt: outbox.put((index, "batch", (pos, raws, dt))),
            )
            outbox.put((index, "done", wall))
        except Exception as exc:  # noqa: BLE001 - the parent re-raises it
            outbox.put((index, "error", repr(exc)))


def _exit_on_sigterm(signum: int, frame: Any) -> None:
    """Stop now: kill the engine's own processes (vLLM's engine core and its workers), then
    leave without the interpreter's exit work. This is the path of a dead or interrupted
    parent, where nothing is left to save; a graceful exit (vLLM's shutdown waits on its
    engine core, which waits on its workers) took 20-35 s on two busy cores."""
    import psutil  # a dependency of accelerate and vLLM; only needed here

    descendants = psutil.Process().children(recursive=True)
    for proc in descendants:
        try:
            proc.kill()
        except psutil.Error:
            pass
    psutil.wait_procs(descendants, timeout=5)
    os._exit(128 + signum)


def _stop(workers: list[tuple[Any, Any]], busy: set[int]) -> None:
    """Stop every worker (see _stop_politely). A Ctrl-C that lands while the stop waits (the
    run ending as the user presses it) must not leave a worker alive: the finalizer has then
    run, and interpreter exit would join a worker nobody asked to stop, forever. So an
    interrupted stop terminates every worker at once, then re-raises."""
    try:
        _stop_politely(workers, busy)
    except BaseException:
        for proc, _ in workers:
            if proc.is_alive():
                proc.terminate()  # the worker's SIGTERM handler takes its engine down too
        for proc, _ in workers:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.kill()
        raise


def _stop_politely(workers: list[tuple[Any, Any]], busy: set[int]) -> None:
    """Ask every idle worker to stop, then terminate and kill what is still alive. A worker
    still busy with a shard (the run was interrupted or failed) reads no stop message until
    its shard is done: it is sent SIGTERM at once, which shuts its engine down."""
    for index, (proc, inbox) in enumerate(workers):
        if not proc.is_alive():
            continue
        if index in busy:
            proc.terminate()
            continue
        try:
            inbox.put(None)
        except (OSError, ValueError):  # queue already closed
            pass
    for proc, _ in workers:
        proc.join(timeout=STOP_TIMEOUT_S)
        if proc.is_alive():
            proc.terminate()
            proc.join(timeout=5)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout=5)


class DataParallelPool:
    def __init__(self, hosts: Sequence[EngineHost], kwargs: dict[str, Any], seed: int) -> None:
        ctx = mp.get_context("spawn")
        self.hosts = list(hosts)
        self.outbox = ctx.Queue()
        self.workers: list[tuple[Any, Any]] = []
        self.pids: list[int] = []
        # Registered before any worker starts, so an exit at any later point stops them.
        self.busy: set[int] = set()  # workers with a shard in hand
        self._finalizer = mp_util.Finalize(self, _stop, args=(self.workers, self.busy),
                                           exitpriority=10)
        try:
            for index, host in enumerate(self.hosts):
                inbox = ctx.Queue()
                proc = ctx.Process(
                    target=_worker_main,
                    args=(index, host, kwargs, seed, os.getpid(), inbox, self.outbox),
                    daemon=False,
                    name=f"nexagauge-vllm-{_where(host)}",
                )
                proc.start()
                self.workers.append((proc, inbox))
            for _ in self.workers:
                index, status, info = self._get()
                if status != "ready":
                    raise RuntimeError(
                        f"vllm data-parallel engine on {_where(self.hosts[index])} failed to "
                        f"start: {info}"
                    )
                self.pids.append(int(info))
        except BaseException:
            self.close()
            raise

    def _get(self) -> tuple[int, str, Any]:
        """The next worker message; a worker that died without a word is an error."""
        while True:
            try:
                message: tuple[int, str, Any] = self.outbox.get(timeout=POLL_S)
                return message
            except queue.Empty:
                dead = [p for p, _ in self.workers if not p.is_alive()]
                if dead:
                    raise RuntimeError(
                        f"vllm worker {dead[0].name} exited with code {dead[0].exitcode}"
                    ) from None

    def run(
        self,
        wire: Sequence[WireRequest],
        stop_ids: Sequence[int],
        on_done: Callable[[list[int], list[dict[str, Any]], float], None],
    ) -> None:
        """Shard `wire` over the engines; `on_done(positions, raws, wall)` in `wire`'s
        positions as each engine finishes requests."""
        if not self._finalizer.still_active():
            raise RuntimeError("the vllm data-parallel engines were shut down after an error")
        ranges = token_shards([len(r.prompt_ids) + r.max_tokens for r in wire],
                              len(self.workers))
        busy = self.busy
        for index, ((_, inbox), rng) in enumerate(zip(self.workers, ranges)):
            if len(rng):
                inbox.put(([wire[i] for i in rng], list(stop_ids)))
                busy.add(index)
        while busy:
            index, status, payload = self._get()
            if status == "batch":
                positions, raws, wall = payload
                on_done([ranges[index][p] for p in positions], raws, wall)
            elif status == "done":
                busy.discard(index)
            else:  # the other engines' late messages would confuse the next call: stop all
                self.close()
                raise RuntimeError(f"vllm worker failed: {payload}")

    def close(self) -> None:
        self._finalizer()  # runs _stop once; later calls (and exit) are no-ops


def _where(host: EngineHost) -> str:
    """`gpu1` or `cpu0-7`, for process names and errors."""
    if host.device == "cuda":
        return "gpu" + ",".join(host.gpu_ids)
    return f"cpu{host.cpus[0]}-{host.cpus[-1]}" if len(host.cpus) > 1 else f"cpu{host.cpus[0]}"

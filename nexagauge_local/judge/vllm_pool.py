"""Data-parallel vLLM: one engine per GPU, each in its own spawned worker process.

Why the process rules matter:
- Workers are *spawned* (a fresh interpreter: CUDA cannot be forked) and *non-daemonic*: vLLM's
  `LLM` starts an engine-core child process, and a daemonic process may not have children
  (vLLM issue 18308), so daemonic workers fail before any work.
- Non-daemonic workers would keep the interpreter from exiting if nobody stopped them, so the
  pool is always shut down: `close()` on the normal path and on errors (the backend's owner
  closes it in a `finally`), and a multiprocessing finalizer at interpreter exit (after a
  Ctrl-C or an exception that skipped `close`), which runs before multiprocessing joins
  non-daemonic children. A worker that does not stop when asked is terminated, then killed.
- CUDA_VISIBLE_DEVICES is set inside each worker before vllm is imported.
Requests are sharded contiguously (same-rubric prompts stay on one engine, which keeps
prefix-cache hits); each worker streams its finished requests back as they complete.
"""

from __future__ import annotations

import multiprocessing as mp
import os
import queue
from collections.abc import Callable, Sequence
from multiprocessing import util as mp_util
from typing import Any

from nexagauge_local.judge.vllm_engine import (
    WireRequest,
    import_vllm,
    run_engine,
    shard_ranges,
    spawn_engine_core,
)

STOP_TIMEOUT_S = 20.0
POLL_S = 1.0


def _worker_main(
    index: int, device_id: str, kwargs: dict[str, Any], seed: int, inbox: Any, outbox: Any
) -> None:
    """Child process: pin the GPU *before* importing vllm, build the engine, serve shards."""
    os.environ["CUDA_VISIBLE_DEVICES"] = device_id
    spawn_engine_core()
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


def _stop(workers: list[tuple[Any, Any]]) -> None:
    """Ask every live worker to stop, then terminate and kill what is still alive."""
    for proc, inbox in workers:
        if proc.is_alive():
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
    def __init__(self, device_ids: Sequence[str], kwargs: dict[str, Any], seed: int) -> None:
        ctx = mp.get_context("spawn")
        self.outbox = ctx.Queue()
        self.workers: list[tuple[Any, Any]] = []
        self.pids: list[int] = []
        # Registered before any worker starts, so an exit at any later point stops them.
        self._finalizer = mp_util.Finalize(self, _stop, args=(self.workers,), exitpriority=10)
        try:
            for index, dev in enumerate(device_ids):
                inbox = ctx.Queue()
                proc = ctx.Process(
                    target=_worker_main,
                    args=(index, dev, kwargs, seed, inbox, self.outbox),
                    daemon=False,
                    name=f"nexagauge-vllm-gpu{dev}",
                )
                proc.start()
                self.workers.append((proc, inbox))
            for _ in self.workers:
                index, status, info = self._get()
                if status != "ready":
                    raise RuntimeError(
                        f"vllm data-parallel engine on GPU {device_ids[index]} failed to "
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
                return self.outbox.get(timeout=POLL_S)
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
        ranges = shard_ranges(len(wire), len(self.workers))
        busy = set()
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
